"""/etc/os-release read the way systemd reads it (os-release(5); systemd's env-file parser,
`load_os_release_pairs`). Pure.

systemd, not the shell, is the reader that matters on these hosts, and the two differ:
- `\\n` and `\\r` both end a line (a CRLF file reads as if it had LF only); blanks around the key
  and after the `=` are dropped, and trailing blanks of an unquoted value;
- a line whose first non-blank character is `#` or `;` is a comment; a backslash in a comment
  escapes the next character, but a line end after it still ends the comment (systemd 254 and
  later, which every appliance runs: Ubuntu 24.04 has 255; 252 continued the comment onto the
  next line);
- a line without `=` is ignored; `export KEY=v` assigns the key `export KEY` (systemd 252 does
  not strip the word), so it sets no `KEY`;
- values: `'...'` literal; `"..."` with `\\"`, `\\\\`, `\\$`, `` \\` `` unescaped, a
  backslash-newline joined, any other backslash kept; unquoted, a backslash escapes the next
  character and a backslash-newline joins lines; quoted and unquoted parts concatenate
  (`"a"b'c'` is `abc`); an unterminated quote runs to the end of the file;
- a later assignment of a key replaces the earlier one.
systemd refuses the whole file only for a NUL character or text that is not UTF-8 (the
reader's decoding refuses the latter before this parser sees it; a lone surrogate is refused
here). tests/owners/test_os_release.py holds this parser to systemd's own code.
"""

from __future__ import annotations

from magicstick_host.domain.parsers.common import ParseError

NEWLINE = "\n\r"
WHITESPACE = " \t\n\r"
COMMENTS = "#;"
SHELL_NEED_ESCAPE = '"\\`$'
# far beyond any real os-release (systemd reads at most a few MiB); the reader's cap is smaller
MAX_CHARS = 1 << 20

_PRE_KEY, _KEY, _PRE_VALUE, _VALUE, _VALUE_ESCAPE = range(5)
_SINGLE, _DOUBLE, _DOUBLE_ESCAPE, _COMMENT, _COMMENT_ESCAPE = range(5, 10)


def parse_os_release(text: str) -> dict[str, str]:
    """Every assignment, keyed as systemd keys it. ParseError for what systemd refuses."""
    if len(text) > MAX_CHARS:
        raise ParseError("larger than 1 MiB")
    if "\x00" in text:
        raise ParseError("a NUL character (systemd refuses the file)")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        raise ParseError("not UTF-8 (systemd refuses the file)")
    values: dict[str, str] = {}
    state = _PRE_KEY
    key: list[str] = []
    value: list[str] = []
    key_blank = -1  # where the key's trailing blanks start, -1: none
    value_blank = -1  # the same for an unquoted value

    def push() -> None:
        name = "".join(key[:key_blank] if key_blank >= 0 else key)
        text_value = "".join(value[:value_blank] if value_blank >= 0 else value)
        values.pop(name, None)
        values[name] = text_value

    for c in text:
        if state == _PRE_KEY:
            if c in COMMENTS:
                state = _COMMENT
            elif c not in WHITESPACE:
                state, key, key_blank = _KEY, [c], -1
        elif state == _KEY:
            if c in NEWLINE:
                state, key = _PRE_KEY, []
            elif c == "=":
                state, value, value_blank = _PRE_VALUE, [], -1
            else:
                if c not in WHITESPACE:
                    key_blank = -1
                elif key_blank < 0:
                    key_blank = len(key)
                key.append(c)
        elif state == _PRE_VALUE:
            if c in NEWLINE:
                push()
                state, key = _PRE_KEY, []
            elif c == "'":
                state = _SINGLE
            elif c == '"':
                state = _DOUBLE
            elif c == "\\":
                state = _VALUE_ESCAPE
            elif c not in WHITESPACE:
                state = _VALUE
                value.append(c)
        elif state == _VALUE:
            if c in NEWLINE:
                push()
                state, key = _PRE_KEY, []
            elif c == "\\":
                state, value_blank = _VALUE_ESCAPE, -1
            else:
                if c not in WHITESPACE:
                    value_blank = -1
                elif value_blank < 0:
                    value_blank = len(value)
                value.append(c)
        elif state == _VALUE_ESCAPE:
            state = _VALUE
            if c not in NEWLINE:
                value.append(c)
        elif state == _SINGLE:
            if c == "'":
                state = _PRE_VALUE
            else:
                value.append(c)
        elif state == _DOUBLE:
            if c == '"':
                state = _PRE_VALUE
            elif c == "\\":
                state = _DOUBLE_ESCAPE
            else:
                value.append(c)
        elif state == _DOUBLE_ESCAPE:
            state = _DOUBLE
            if c in SHELL_NEED_ESCAPE:
                value.append(c)
            elif c != "\n":
                value.extend(("\\", c))
        elif state == _COMMENT:
            if c == "\\":
                state = _COMMENT_ESCAPE
            elif c in NEWLINE:
                state = _PRE_KEY
        else:  # _COMMENT_ESCAPE
            state = _PRE_KEY if c in NEWLINE else _COMMENT
    if state in (_PRE_VALUE, _VALUE, _VALUE_ESCAPE, _SINGLE, _DOUBLE, _DOUBLE_ESCAPE):
        push()
    return values
