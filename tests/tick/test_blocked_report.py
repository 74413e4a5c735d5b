"""A stopped worker shows itself through what the dashboard reads (contract.md, "The host
report"): plan blocked and every capability unsupported, each with the block's message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from magicstick_host.errors import StateCorruptError
from tests.harness.world import World

pytestmark = pytest.mark.apiserver

READY = "strix-halo-ubuntu-26.04-ready"
SECTIONS = ("gpuMemory", "network", "modelCache")


def assert_withdrawn(report: dict[str, Any], why: str) -> None:
    assert report["plan"]["state"] == "blocked"
    assert "experiment" not in report["plan"]
    assert why in report["plan"]["message"]
    for section in SECTIONS:
        assert report[section]["supported"] is False, section
        assert why in report[section]["message"], section
    assert report["actions"] == []


def test_a_corrupt_state_withdraws_every_action_from_the_report(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, READY)
    before = world.published()
    assert before["plan"]["state"] == "ready" and before["gpuMemory"]["supported"] is True
    (world.state_dir / "state.json").write_text("{not json")
    with pytest.raises(StateCorruptError):
        world.tick()  # the corrupt file is archived and the block written (exit 4)
    world.tick()  # the blocked state publishes itself
    report = world.report()
    assert report is not None
    assert_withdrawn(report, "corrupt")
    # the dashboard's own gates: nothing is actionable
    assert report["plan"]["state"] not in ("available", "ready")
    assert report["gpuMemory"]["supported"] is not True


def test_a_removed_execution_state_withdraws_every_action(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, READY)
    created = world.create_request("reboot")
    world.tick()  # accepted and scheduled
    kube.delete_hostoperation(world.request_name, created["metadata"]["uid"])
    world.tick()  # the operation is stopped, the worker blocked
    world.clock.advance(61)
    world.tick()
    report = world.report()
    assert report is not None
    assert_withdrawn(report, "execution state was removed")
    assert report["operation"]["blocked"] == "execution-state-removed"
