"""/etc/default/grub (a shell fragment): the GRUB_CMDLINE_LINUX(_DEFAULT) assignments."""

from __future__ import annotations

import re

from magicstick_host.domain.parsers.common import ParseError, split_lines

_ASSIGN = re.compile(r"\s*(?:export\s+)?(GRUB_CMDLINE_LINUX(?:_DEFAULT)?)=(.*)")


def _shell_word(raw: str, lineno: int) -> str:
    """The first shell word of `raw`: quoted and unquoted pieces glued together, stopping at
    a blank. Expansions like `$VAR` are kept as text: they cannot add a literal override."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        char = raw[i]
        if char in " \t":
            break
        if char == "'":
            end = raw.find("'", i + 1)
            if end < 0:
                raise ParseError(f"line {lineno}: unterminated quote")
            out.append(raw[i + 1 : end])
            i = end + 1
        elif char == '"':
            i += 1
            while i < len(raw) and raw[i] != '"':
                if raw[i] == "\\" and i + 1 < len(raw) and raw[i + 1] in '"\\$`':
                    i += 1
                out.append(raw[i])
                i += 1
            if i >= len(raw):
                raise ParseError(f"line {lineno}: unterminated quote")
            i += 1
        elif char == "\\" and i + 1 < len(raw):
            out.append(raw[i + 1])
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out)


def grub_cmdlines(text: str) -> tuple[tuple[str, str], ...]:
    """Every (variable, value) assignment of GRUB_CMDLINE_LINUX and _DEFAULT, in order."""
    found: list[tuple[str, str]] = []
    for lineno, line in enumerate(split_lines(text), start=1):
        if line.lstrip().startswith("#"):
            continue
        match = _ASSIGN.fullmatch(line)
        if match is not None:
            found.append((match.group(1), _shell_word(match.group(2), lineno)))
    return tuple(found)
