"""Crash at every boundary of an operation, then let later ticks finish it.

The reference run counts every crash point the tick passes (before/after each state write, each
effect and each status patch). Then, for each point, a fresh host runs the same operation with a
crash exactly there, and ticks on until the operation ends. Whatever the crash point:
- no effect happened more often than in the reference run;
- the operation ends Succeeded, except when the crash fell between a saved intent and its
  effect: then the effect never ran, nobody can prove it, and the end is Interrupted;
- an Interrupted memory change whose firmware write happened says it is pending;
- the HostOperation status and the local state agree, and the journal tells the story.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from magicstick_host.sim.writer import load_host, write_host
from tests.harness.world import CrashAt, World

pytestmark = pytest.mark.apiserver

READY = "strix-halo-ubuntu-26.04-ready"
OLD_KERNEL = "strix-halo-ubuntu-26.04-old-kernel"


def power(action: str) -> Callable[[World], None]:
    def make(world: World) -> None:
        world.create_request(action)

    return make


def prepare(world: World) -> None:
    plan = world.published()["plan"]
    world.create_request("prepare-gpu", planId=plan["id"], allowExperimental=True)


def memory(world: World) -> None:
    cap = world.published()["gpuMemory"]
    world.create_request("configure-gpu-memory", planId=cap["id"], allowExperimental=True,
                         gpuMemory={"carveoutIndex": 9, "dynamicLimitMi": 65536})


def with_publisher(world: World) -> None:
    """The appliance's GPU evidence publisher is installed: it runs before the handoff."""
    host = load_host(world.root)
    host.gpu_publisher = True
    write_host(host, world.root)
    prepare(world)


CASES: dict[str, tuple[str, Callable[[World], None]]] = {
    "reboot": (READY, power("reboot")),
    "poweroff": (READY, power("poweroff")),
    "prepare-gpu": (OLD_KERNEL, prepare),
    "prepare-gpu-with-evidence-publisher": (READY, with_publisher),
    "configure-gpu-memory": (READY, memory),
}
# a step whose outcome does not matter to the operation: an interrupted one is noted, not fatal
HARMLESS_STEPS = ("refresh-gpu-evidence",)
OUTCOMES: Counter[tuple[str, str]] = Counter()


def effect_counts(world: World) -> Counter[str]:
    counted: Counter[str] = Counter(e["effect"] for e in world.effects())
    op = world.state().operation
    if op is not None:
        counted["write-carveout"] = sum(1 for s in op.steps if s.name == "write-carveout"
                                        and s.outcome in ("done", "classified-done"))
    return counted


def between_intent_and_effect(point: str) -> bool:
    return point.startswith(("after-save:intent:", "before-effect:")) and not point.endswith(
        HARMLESS_STEPS
    )


def start(tmp: Path, kube: Any, case: str) -> World:
    scenario, make_request = CASES[case]
    # ModuleActivation amd-gpu is cluster-wide: each run starts from none, as a fresh cluster
    kube.request("DELETE", "/apis/appliance.magicstick.dev/v1alpha1/namespaces/ai-system/"
                 "moduleactivations/amd-gpu")
    world = World(tmp, kube, scenario)
    world.published()  # the dashboard reads the report before it asks
    make_request(world)
    return world


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_crash_point(tmp_path: Path, kube: Any, case: str) -> None:
    reference = start(tmp_path / "reference", kube, case)
    counter = CrashAt(None)
    assert reference.drive(counter) == "Succeeded"
    points = counter.points
    expected_effects = effect_counts(reference)
    assert len(points) >= 8, points
    for index, point in enumerate(points, start=1):
        world = start(tmp_path / f"crash-{index}", kube, case)
        final = world.drive(CrashAt(index))
        op = world.state().operation
        assert op is not None and op.phase == final
        for effect, times in effect_counts(world).items():
            assert times <= expected_effects[effect], f"crash at {point}: {effect} x{times}"
        expected = "Interrupted" if between_intent_and_effect(point) else "Succeeded"
        assert final == expected, f"crash at #{index} {point}: {final}: {op.message}"
        # written but not yet active: the next restart will apply it, and the message says so
        data = op.to_json()["data"]
        if final == "Interrupted" and data.get("carveoutWritten") \
                and data.get("stage") == "carveout":
            assert "pending and will take effect at the next restart" in op.message, point
        obj = world.hostop()
        assert obj is not None and obj["status"]["phase"] == op.phase, point
        assert obj["status"]["requestId"] == op.request_id
        events = [e["event"] for e in world.journal()]
        assert events[0] == "accepted" and events.count("accepted") == 1, (point, events)
        OUTCOMES[(point, final)] += 1
    print(f"\n{case}: {len(points)} crash points")
    for (point, phase), _ in sorted(OUTCOMES.items()):
        print(f"  {point:<44} -> {phase}")
    OUTCOMES.clear()
