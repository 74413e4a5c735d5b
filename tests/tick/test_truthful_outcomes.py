"""Outcomes tell the truth: what the worker reports is what it can prove (issue "Bounded,
truthful, and soaked"), through the real tick on the real apiserver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from magicstick_host.sim.boot import boot_host
from magicstick_host.sim.faults import SimulatedCrash
from magicstick_host.sim.writer import load_host
from tests.harness.world import World

pytestmark = pytest.mark.apiserver

READY = "strix-halo-ubuntu-26.04-ready"


def crash_at(point: str) -> Any:
    def hook(reached: str) -> None:
        if reached == point:
            raise SimulatedCrash(reached)

    return hook


def status(world: World) -> dict[str, Any]:
    return dict((world.hostop() or {}).get("status") or {})


def test_a_new_boot_after_an_unconfirmed_shutdown_is_interrupted_not_succeeded(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, READY)
    world.create_request("reboot")
    world.tick(crash_at("before-effect:schedule-shutdown"))  # died before `shutdown` ran
    assert world.effects("shutdown") == []
    # then the host restarted for another reason (a power cut), and the kubelet says so
    new_boot = boot_host(world.root)
    world.clock.reboot()
    kube.set_node_info(world.node_name, boot_id=new_boot,
                       kernel=load_host(world.root).kernel.release)
    world.tick()
    world.tick()
    op = world.state().operation
    assert op is not None and op.phase == "Interrupted" and op.outcome == "uncertain"
    assert "new boot was observed" in op.message and "not confirmed" in op.message
    assert status(world)["phase"] == "Interrupted"
    assert world.effects("shutdown") == []  # and nothing was repeated


def test_an_accepted_request_whose_host_restarted_before_its_first_step_never_starts(
    tmp_path: Path, kube: Any
) -> None:
    """Found in the appliance VM (#34): a power loss right after a restart request was
    accepted, and the new boot, well within the request's lifetime, scheduled the restart
    anyway: a second restart the administrator never saw coming, from a request made for
    another boot."""
    world = World(tmp_path, kube, READY)
    world.create_request("reboot")
    world.tick(crash_at("before-save:intent:schedule-shutdown"))  # accepted; the power fails
    op = world.state().operation
    assert op is not None and op.phase == "Accepted" and not op.steps
    new_boot = boot_host(world.root)
    world.clock.reboot(downtime_s=30.0, uptime_s=20.0)  # back within the request's 300 s
    kube.set_node_info(world.node_name, boot_id=new_boot,
                       kernel=load_host(world.root).kernel.release)
    world.tick()
    world.tick()
    op = world.state().operation
    assert op is not None and op.phase == "Interrupted", op
    assert "restarted before" in op.message and "nothing was executed" in op.message
    assert status(world)["phase"] == "Interrupted"
    assert world.effects("shutdown") == [] and load_host(world.root).shutdown is None


def test_an_operation_that_cannot_start_within_the_request_lifetime_never_starts_late(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, READY)
    world.create_request("reboot")
    # the intent of the first step cannot be saved (think: the state disk is full)
    disk_full = crash_at("before-save:intent:schedule-shutdown")
    for _ in range(21):  # five minutes of ticks
        world.tick(disk_full)
    assert world.state().operation.phase == "Accepted"  # type: ignore[union-attr]
    world.tick()  # the disk has room again, but the request's lifetime is over
    op = world.state().operation
    assert op is not None and op.phase == "Interrupted"
    assert "too late" in op.message and "nothing was executed" in op.message
    assert world.effects("shutdown") == []
    assert status(world)["phase"] == "Interrupted"


def test_lost_execution_state_says_what_is_known_about_a_pending_shutdown(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, READY)
    world.create_request("reboot")
    world.tick()
    assert status(world)["phase"] == "RebootScheduled"
    (world.state_dir / "state.json").unlink()  # the local record is gone
    world.tick()
    message = status(world)["message"]
    assert status(world)["phase"] == "Rejected"
    assert "execution state was lost" in message
    assert "shutdown is still scheduled" in message
    assert "Nothing was executed" not in message and "no action was executed" not in message
    assert load_host(world.root).shutdown is not None  # left as it was
