"""/run/systemd/shutdown/scheduled: `USEC=`, `WARN_WALL=`, `MODE=` (newer: `UID=`) lines,
present only while a shutdown is pending."""

from __future__ import annotations

import re

from magicstick_host.domain.evidence import ScheduledShutdown
from magicstick_host.domain.parsers.common import ParseError, parse_uint, shorten, split_lines

# compiled (by re's cache) only while a shutdown is pending: inspect reads no such file else
_LINE = r"([A-Z_]+)=(.*)"


def parse_scheduled_shutdown(text: str) -> ScheduledShutdown:
    """Mode and time of the pending shutdown. USEC and MODE are required; other keys
    (WARN_WALL, UID, TTY, WALL_MESSAGE) are accepted and ignored."""
    values: dict[str, str] = {}
    for lineno, line in enumerate(split_lines(text), start=1):
        match = re.fullmatch(_LINE, line)
        if match is None:
            raise ParseError(f"line {lineno}: not KEY=value: {shorten(line)!r}")
        values[match.group(1)] = match.group(2)
    if "USEC" not in values or "MODE" not in values:
        raise ParseError("USEC or MODE missing")
    usec = parse_uint(values["USEC"], "USEC")
    mode = values["MODE"]
    if not re.fullmatch(r"[a-z][a-z-]*", mode):
        raise ParseError(f"MODE: unexpected value {shorten(mode)!r}")
    return ScheduledShutdown(mode=mode, usec=usec)
