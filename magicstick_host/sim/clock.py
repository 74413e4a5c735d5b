"""The simulated host's clocks: the real ones, with the host's CLOCK_BOOTTIME moved ahead by
`Host.boottime_offset_s` (`sim fire-timers --elapse` lets the time pass until a transient timer
is due). The wall clock is never moved: the apiserver and every other host share it.

`SimClock` is the clock port of the commands run with `--executor sim` (app.py), so a tick,
`network-rollback` and the simulator's timers see the same CLOCK_BOOTTIME."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from magicstick_host.ports.clock import Instant
from magicstick_host.sim.model import Host


def boottime(host: Host) -> float:
    """The host's CLOCK_BOOTTIME now."""
    return time.clock_gettime(time.CLOCK_BOOTTIME) + host.boottime_offset_s


class SimClock:
    """The clocks of the simulated host at `root` (its offset read once: a command is short,
    and only a `sim` command between two of them moves it)."""

    def __init__(self, root: Path | str) -> None:
        from magicstick_host.sim.writer import load_host

        self.offset_s = load_host(Path(root)).boottime_offset_s

    def now(self) -> Instant:
        return Instant(wall=datetime.now(UTC),
                       boottime=time.clock_gettime(time.CLOCK_BOOTTIME) + self.offset_s)
