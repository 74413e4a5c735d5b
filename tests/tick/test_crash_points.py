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
from tests.model_cache.cluster import clear_model_workloads
from tests.model_cache.e2e import CACHES, assert_survivors

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


def scan(world: World) -> None:
    """scan-wifi (network.md): the request Secret names the interface."""
    from tests.network.world import request_network

    request_network(world, {"interface": "wlp3s0"}, action="scan-wifi")


CASES: dict[str, tuple[str, Callable[[World], None]]] = {
    "reboot": (READY, power("reboot")),
    "poweroff": (READY, power("poweroff")),
    "prepare-gpu": (OLD_KERNEL, prepare),
    "prepare-gpu-with-evidence-publisher": (READY, with_publisher),
    "configure-gpu-memory": (READY, memory),
    "scan-wifi": ("network-ethernet-dhcp", scan),
}
# -- clear-model-cache (issue 12): a deletion found without its outcome is never resumed, so a
# crash anywhere from its intent to its saved outcome ends Interrupted; nothing is deleted
# twice, and nothing but the allowed entries ever is
DELETE_STEP = "delete-cache-entry"
# the shared-store payloads only the deleted models used (issue 25): the same rule
SWEEP_STEP = "sweep-shared-blobs"


def clear_cache(world: World) -> None:
    clear_model_workloads(world.kube)  # a model-serving object left by another test blocks
    world.create_request("clear-model-cache", planId=world.published()["modelCache"]["id"])


CASES["clear-model-cache"] = (CACHES, clear_cache)


def never_resumed(case: str, point: str) -> bool:
    return case == "clear-model-cache" and point in (
        f"after-effect:{DELETE_STEP}", f"before-save:outcome:{DELETE_STEP}",
        f"after-effect:{SWEEP_STEP}", f"before-save:outcome:{SWEEP_STEP}")


def assert_cache_entries_deleted_once(world: World) -> None:
    op = world.state().operation
    assert op is not None
    tried = [s.inputs["entry"] for s in op.steps if s.name == DELETE_STEP]
    assert len(tried) == len(set(tried)), tried
    swept = [n for s in op.steps if s.name == SWEEP_STEP for n in s.inputs["blobs"]]
    assert len(swept) == len(set(swept)), swept
    assert_survivors(world)  # the dataset's store payload among them
# ----------------------------------------------------------------------------------------

# a step whose outcome does not matter to the operation: an interrupted one is noted, not fatal
HARMLESS_STEPS = ("refresh-gpu-evidence",)
OUTCOMES: Counter[tuple[str, str]] = Counter()


def effect_counts(world: World) -> Counter[str]:
    counted: Counter[str] = Counter(e["effect"] for e in world.effects())
    op = world.state().operation
    if op is not None:
        counted[DELETE_STEP] = sum(1 for s in op.steps if s.name == DELETE_STEP)
        counted[SWEEP_STEP] = sum(1 for s in op.steps if s.name == SWEEP_STEP)
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
        interrupted = between_intent_and_effect(point) or never_resumed(case, point)
        expected = "Interrupted" if interrupted else "Succeeded"
        assert final == expected, f"crash at #{index} {point}: {final}: {op.message}"
        # written but not yet active: the next restart will apply it, and the message says so
        data = op.to_json()["data"]
        if final == "Interrupted" and data.get("carveoutWritten") \
                and data.get("stage") == "carveout":
            assert "pending and will take effect at the next restart" in op.message, point
        if case == "clear-model-cache":
            assert_cache_entries_deleted_once(world)
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
