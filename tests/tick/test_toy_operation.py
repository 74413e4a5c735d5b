"""Adding an operation is its module, one registry line and its test: the toy operation of
tests/domain/toy_operation.py, registered here for one test, runs through the real tick, on a
simulated host and the real apiserver, with nothing else changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from magicstick_host.domain.operations.registry import OPERATIONS
from magicstick_host.effects import EFFECTS, EffectPorts
from tests.domain.toy_operation import TOY, TOY_STEP, ToyData, toy_capability_id
from tests.harness.world import World

pytestmark = pytest.mark.apiserver

READY = "strix-halo-ubuntu-26.04-ready"


def test_a_toy_operation_runs_end_to_end(
    tmp_path: Path, kube: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, Any]] = []

    def toy_effect(inputs: dict[str, Any], ports: EffectPorts, uid: str) -> tuple[bool, str]:
        calls.append(inputs)
        return True, "the toy cleaned up"

    # the registration: the operation, and the effect its step runs
    monkeypatch.setitem(OPERATIONS, TOY.action, TOY)
    monkeypatch.setitem(EFFECTS, TOY_STEP, toy_effect)

    world = World(tmp_path, kube, READY)
    assert TOY.action in world.published()["actions"]  # the report offers it
    created = world.create_request(TOY.action, planId=toy_capability_id(world.node_uid))
    assert world.drive() == "Succeeded"
    assert calls == [{"node": world.node_uid}]  # its one step ran once
    op = world.state().operation
    assert op is not None and op.request_uid == created["metadata"]["uid"]
    # its typed record, through state.json, with what its declared read showed at intake
    assert op.data == ToyData(node_uid=world.node_uid, cleaned=True, read_seen=True)
    assert op.reboot_budget == 0
    events = [e["event"] for e in world.journal()]
    assert events[:3] == ["accepted", f"intent:{TOY_STEP}", f"outcome:{TOY_STEP}"]
    assert world.hostop() is not None and world.phase() == "Succeeded"


def test_without_its_registration_the_action_is_not_offered_and_is_rejected(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, READY)
    assert TOY.action not in world.published()["actions"]
    world.create_request(TOY.action, planId=toy_capability_id(world.node_uid))
    world.tick()
    status = (world.hostop() or {}).get("status") or {}
    assert status.get("phase") == "Rejected"
    assert "not available on this host yet" in status.get("message", "")
