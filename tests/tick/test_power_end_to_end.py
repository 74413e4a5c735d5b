"""reboot / poweroff end to end: the dashboard user, the real apiserver, the real tick, and the
host simulator through the restart."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.harness.world import World

pytestmark = pytest.mark.apiserver

SCENARIO = "strix-halo-ubuntu-26.04-ready"


@pytest.fixture
def world(tmp_path: Path, kube: Any) -> World:
    return World(tmp_path, kube, SCENARIO)


def phase(world: World) -> str:
    obj = world.hostop()
    assert obj is not None
    return str((obj.get("status") or {}).get("phase", ""))


@pytest.mark.parametrize(
    ("action", "scheduled"), [("reboot", "RebootScheduled"), ("poweroff", "PoweroffScheduled")]
)
def test_power_operation_runs_through_the_restart_with_exactly_one_shutdown(
    world: World, action: str, scheduled: str
) -> None:
    world.create_request(action)
    world.tick()
    assert phase(world) == scheduled
    assert world.state().operation is not None
    assert world.state().operation.reboots_used == 1  # type: ignore[union-attr]
    world.tick()  # same boot: keeps waiting, nothing repeated
    assert phase(world) == scheduled
    world.boot()
    world.tick()
    assert phase(world) == "Succeeded"
    assert len(world.effects("shutdown")) == 1
    mode = "-r" if action == "reboot" else "-P"
    assert world.effects("shutdown")[0]["argv"][1:3] == [mode, "+1"]
    status = world.hostop()["status"]  # type: ignore[index]
    assert status["rebootsUsed"] == 1 and status["rebootBudget"] == 1
    if action == "poweroff":
        assert "cannot prove the physical power-off" in status["message"]
    events = [e["event"] for e in world.journal()]
    assert events[0] == "accepted" and "outcome:schedule-shutdown" in events


def test_no_new_boot_within_600_s_fails_and_never_shuts_down_twice(world: World) -> None:
    world.create_request("reboot")
    world.tick()
    world.clock.advance(570)  # each tick also moves the clock 15 s
    world.tick()
    assert phase(world) == "RebootScheduled"
    world.clock.advance(30)
    world.tick()
    assert phase(world) == "Failed"
    assert "no new boot" in world.hostop()["status"]["message"].lower()  # type: ignore[index]
    for _ in range(3):
        world.tick()
    assert len(world.effects("shutdown")) == 1


def test_a_failed_shutdown_command_is_failed_and_not_retried(world: World) -> None:
    from magicstick_host.sim.writer import load_host, write_host

    host = load_host(world.root)
    host.faults.append("shutdown")
    write_host(host, world.root)
    world.create_request("reboot")
    world.tick()
    assert phase(world) == "Failed"
    world.tick()
    assert len(world.effects("shutdown-failed")) == 1 and not world.effects("shutdown")


def test_a_replayed_request_id_is_rejected_with_nothing_run(world: World, kube: Any) -> None:
    first = world.create_request("reboot")
    world.tick()
    world.boot()
    world.tick()
    assert phase(world) == "Succeeded"
    kube.delete_hostoperation(world.request_name, first["metadata"]["uid"])
    world.create_request("reboot", requestId=first["spec"]["requestId"])
    world.tick()
    assert phase(world) == "Rejected"
    assert "replay" in world.hostop()["status"]["message"]  # type: ignore[index]
    assert len(world.effects("shutdown")) == 1


def test_an_expired_request_is_rejected_with_nothing_run(world: World) -> None:
    created = world.create_request("reboot")
    stamp = datetime.fromisoformat(created["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    world.clock.advance((stamp + timedelta(seconds=301) - world.clock.wall).total_seconds())
    world.tick()
    assert phase(world) == "Rejected"
    assert "no action was executed" in world.hostop()["status"]["message"]  # type: ignore[index]
    assert not world.effects("shutdown")


def test_a_request_for_another_boot_is_rejected(world: World) -> None:
    world.create_request("reboot", bootId="00000000-0000-4000-8000-000000000000")
    world.tick()
    assert phase(world) == "Rejected"
    assert not world.effects("shutdown")


def test_deleting_the_active_request_stops_the_worker_until_recover(
    world: World, kube: Any
) -> None:
    created = world.create_request("reboot")
    world.tick()
    kube.delete_hostoperation(world.request_name, created["metadata"]["uid"])
    world.tick()
    state = world.state()
    assert state.block is not None and state.block.code == "execution-state-removed"
    assert state.operation is not None and state.operation.phase == "Interrupted"
    report = world.report()
    assert report is not None and report["operation"]["blocked"] == "execution-state-removed"
    assert report["actions"] == []
    world.create_request("poweroff")
    world.tick()
    assert phase(world) == "Rejected"
    assert "stopped" in world.hostop()["status"]["message"]  # type: ignore[index]
    assert len(world.effects("shutdown")) == 1
