"""cgroup v2: /proc/self/cgroup (`0::/path`) and `memory.max` (`max` or bytes)."""

from __future__ import annotations

from magicstick_host.domain.parsers.common import ParseError, parse_uint, single_line, split_lines


def parse_cgroup_v2_path(text: str) -> str:
    """The unified-hierarchy path, e.g. `/system.slice/x.service`. On a hybrid host the v1
    lines (`N:controller:/path`) are skipped."""
    found: str | None = None
    for line in split_lines(text):
        hierarchy, sep, rest = line.partition(":")
        controllers, sep2, path = rest.partition(":")
        if not sep or not sep2:
            raise ParseError("not hierarchy:controllers:path")
        if hierarchy == "0" and controllers == "":
            if found is not None:
                raise ParseError("two cgroup v2 entries")
            found = path
    if found is None:
        raise ParseError("no cgroup v2 (0::) entry")
    if not found.startswith("/") or "\x00" in found:
        raise ParseError("cgroup path is not absolute")
    return found


def parse_memory_max(text: str) -> int | None:
    """Bytes, or None for `max` (no limit at this level)."""
    if single_line(text, "memory.max") == "max":
        return None
    return parse_uint(text, "memory.max")
