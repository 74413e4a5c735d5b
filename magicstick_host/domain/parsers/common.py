"""The one parse failure type and the strict scalar readers every parser shares."""

from __future__ import annotations

import re

_UINT = re.compile(r"[0-9]+")
_INT = re.compile(r"-?[0-9]+")
# values far beyond any real count are garbage, and int() of a huge string is slow
MAX_DIGITS = 20


class ParseError(ValueError):
    """Text that is not in the expected format. The message is a short reason."""


def single_line(text: str, what: str) -> str:
    """The one line of a sysfs/procfs value file: exactly one line, with or without `\\n`."""
    body = text[:-1] if text.endswith("\n") else text
    if "\n" in body:
        raise ParseError(f"{what}: more than one line")
    return body


def parse_uint(text: str, what: str) -> int:
    """A non-negative decimal, as in `123\\n`. No sign, spaces or base prefix."""
    body = single_line(text, what)
    if len(body) > MAX_DIGITS or not _UINT.fullmatch(body):
        raise ParseError(f"{what}: not a non-negative integer: {shorten(body)!r}")
    return int(body)


def parse_int(text: str, what: str) -> int:
    """A signed decimal, as in `-1\\n` (amdgpu's "unset")."""
    body = single_line(text, what)
    if len(body) > MAX_DIGITS or not _INT.fullmatch(body):
        raise ParseError(f"{what}: not an integer: {shorten(body)!r}")
    return int(body)


def shorten(text: str, limit: int = 40) -> str:
    """Garbage quoted in a reason stays short: reports are size-limited."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def split_lines(text: str) -> list[str]:
    """Lines split on `\\n` only (not on the other characters str.splitlines() honours),
    without the empty string a final newline leaves."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines
