"""Crash at every boundary of a power operation, then let later ticks finish it.

The reference run counts every crash point the tick passes (before/after each state write, each
effect and each status patch). Then, for each point, a fresh host runs the same operation with a
crash exactly there, and ticks on until the operation ends. Whatever the crash point:
- no effect happened twice;
- the final phase is allowed for that point (Interrupted only when the shutdown never ran);
- the HostOperation status and the local state agree;
- the journal tells the story.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from magicstick_host.sim.writer import load_host
from tests.harness.world import CrashAt, World

pytestmark = pytest.mark.apiserver

SCENARIO = "strix-halo-ubuntu-26.04-ready"
OUTCOMES: Counter[tuple[str, str, str]] = Counter()


def drive(world: World, crash: CrashAt, max_ticks: int = 12) -> None:
    for _ in range(max_ticks):
        world.tick(crash)
        if load_host(world.root).shutdown is not None:
            world.boot()
        op = world.state().operation
        obj = world.hostop()
        if (
            op is not None
            and op.terminal
            and obj
            and obj.get("status", {}).get("phase") == op.phase
        ):
            return


def reference_points(tmp: Path, kube: Any, action: str) -> list[str]:
    world = World(tmp, kube, SCENARIO)
    world.create_request(action)
    counter = CrashAt(None)
    drive(world, counter)
    assert world.state().operation.phase == "Succeeded"  # type: ignore[union-attr]
    return counter.points


@pytest.mark.parametrize("action", ["reboot", "poweroff"])
def test_every_crash_point_of_a_power_operation(tmp_path: Path, kube: Any, action: str) -> None:
    points = reference_points(tmp_path / "reference", kube, action)
    assert len(points) >= 8, points
    for index, point in enumerate(points, start=1):
        world = World(tmp_path / f"crash-{index}", kube, SCENARIO)
        world.create_request(action)
        drive(world, CrashAt(index))
        state = world.state()
        op = state.operation
        assert op is not None, f"crash at {point}: no operation recorded"
        shutdowns = len(world.effects("shutdown"))
        assert shutdowns <= 1, f"crash at {point}: shutdown ran {shutdowns} times"
        expected = "Succeeded" if shutdowns == 1 else "Interrupted"
        assert op.phase == expected, f"crash at {point}: {op.phase} ({op.message})"
        obj = world.hostop()
        assert obj is not None and obj["status"]["phase"] == op.phase, point
        assert obj["status"]["requestId"] == op.request_id
        events = [e["event"] for e in world.journal()]
        assert "accepted" in events, f"crash at {point}: journal {events}"
        OUTCOMES[(action, point, op.phase)] += 1
    print(f"\n{action}: {len(points)} crash points")
    for (act, point, phase), _ in sorted(OUTCOMES.items()):
        if act == action:
            print(f"  {point:<40} -> {phase}")
