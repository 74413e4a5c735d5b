"""Effects: each performs exactly what a RunStep says, through one port, and decides nothing."""

from __future__ import annotations

from typing import Any

from magicstick_host.effects.shutdown import schedule_shutdown
from magicstick_host.ports.runner import CommandRunner


def perform(step: str, inputs: dict[str, Any], runner: CommandRunner) -> tuple[bool, str]:
    """Run one step's effect. Returns (ok, detail); never retries."""
    if step == "schedule-shutdown":
        return schedule_shutdown(
            runner, str(inputs["mode"]), int(inputs["delayMinutes"]), str(inputs["text"])
        )
    raise ValueError(f"no effect named {step!r}")
