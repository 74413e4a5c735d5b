"""/etc/os-release: `KEY=value` lines with shell-style quoting (os-release(5))."""

from __future__ import annotations

from magicstick_host.domain.parsers.common import ParseError, shorten, split_lines
from magicstick_host.lazy_pattern import LazyPattern

_ASSIGN = LazyPattern(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)")
# inside double quotes the shell only unescapes these
_DQ_ESCAPABLE = '"\\$`'


def _unquote(raw: str, lineno: int) -> str:
    if not raw:
        return ""
    if raw[0] == "'":
        if len(raw) < 2 or raw[-1] != "'" or "'" in raw[1:-1]:
            raise ParseError(f"line {lineno}: bad single quoting")
        return raw[1:-1]
    if raw[0] != '"':
        # os-release(5) allows unquoted values without shell specials
        if any(c in raw for c in " \t\"'\\$`"):
            raise ParseError(f"line {lineno}: unquoted special character")
        return raw
    out: list[str] = []
    i = 1
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw) and raw[i + 1] in _DQ_ESCAPABLE:
            out.append(raw[i + 1])
            i += 2
            continue
        if c == '"':
            if i != len(raw) - 1:
                raise ParseError(f"line {lineno}: text after closing quote")
            return "".join(out)
        if c in "$`":
            raise ParseError(f"line {lineno}: unescaped {c!r} in value")
        out.append(c)
        i += 1
    raise ParseError(f"line {lineno}: unterminated quote")


def parse_os_release(text: str) -> dict[str, str]:
    """All assignments; a later assignment of the same key wins, as when sourced by a shell."""
    values: dict[str, str] = {}
    for lineno, line in enumerate(split_lines(text), start=1):
        stripped = line.strip(" \t")
        if not stripped or stripped.startswith("#"):
            continue
        match = _ASSIGN.fullmatch(stripped)
        if match is None:
            raise ParseError(f"line {lineno}: not KEY=value: {shorten(stripped)!r}")
        values[match.group(1)] = _unquote(match.group(2), lineno)
    return values
