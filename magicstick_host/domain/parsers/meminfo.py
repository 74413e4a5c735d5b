"""/proc/meminfo: `Name:   <n> kB` lines. Only MemTotal matters (KiB, carve-out excluded)."""

from __future__ import annotations

import re

from magicstick_host.domain.parsers.common import MAX_DIGITS, ParseError, split_lines

_MEMTOTAL = re.compile(r"MemTotal:[ \t]*([0-9]+) kB")


def parse_mem_total_kib(text: str) -> int:
    found: int | None = None
    for line in split_lines(text):
        if not line.startswith("MemTotal:"):
            continue
        match = _MEMTOTAL.fullmatch(line.rstrip())
        if match is None or len(match.group(1)) > MAX_DIGITS:
            raise ParseError("MemTotal: not '<n> kB'")
        if found is not None:
            raise ParseError("MemTotal: appears twice")
        found = int(match.group(1))
    if found is None:
        raise ParseError("no MemTotal line")
    if found == 0:
        raise ParseError("MemTotal: zero")
    return found
