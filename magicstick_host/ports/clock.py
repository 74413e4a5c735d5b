"""The clock port. Decisions take times as arguments; only app.py reads the real clock."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol

from magicstick_host.lite_dataclasses import dataclass


@dataclass(frozen=True)
class Instant:
    """One reading of both clocks, taken together."""

    # wall time, UTC; for request expiry and deadlines across boots (with the boot ID)
    wall: datetime
    # CLOCK_BOOTTIME seconds; for deadlines within one boot, immune to NTP steps
    boottime: float


class Clock(Protocol):
    def now(self) -> Instant: ...


class RealClock:
    def now(self) -> Instant:
        return Instant(wall=datetime.now(UTC), boottime=time.clock_gettime(time.CLOCK_BOOTTIME))
