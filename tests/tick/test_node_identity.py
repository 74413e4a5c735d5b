"""A Node that is re-created (new UID) or renamed (the worker's Node name answers 404) while an
operation runs: reported as that, the operation stopped (Interrupted), the worker not blocked
(domain/supervision.py says why). The real tick, a simulated host and the real apiserver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from magicstick_host.domain.cluster import hostoperation_name
from tests.harness.world import World

pytestmark = pytest.mark.apiserver

READY = "strix-halo-ubuntu-26.04-ready"


def recreate_node(world: World, kube: Any) -> str:
    """The Node is deleted and registered again under the same name (e.g. K3s reinstalled):
    a new UID. Returns it; the world's requests go to the new Node from now on."""
    kube.request("DELETE", f"/api/v1/nodes/{world.node_name}")
    node = kube.create_node(world.node_name, boot_id=world.boot_id, kernel="7.0.0-31-generic")
    world.node_uid = node["metadata"]["uid"]
    world.request_name = hostoperation_name(world.node_uid)
    return str(world.node_uid)


def until(world: World, phase: str, ticks: int = 8) -> None:
    for _ in range(ticks):
        world.tick()
        op = world.state().operation
        if op is not None and op.phase == phase:
            return
    raise AssertionError(f"never reached {phase}: {world.state().operation}")


def old_status(kube: Any, name: str) -> dict[str, Any]:
    code, obj = kube.request(
        "GET", f"/apis/appliance.magicstick.dev/v1alpha1/namespaces/ai-system/hostoperations/{name}"
    )
    assert code == 200, obj
    return dict(obj.get("status") or {})


def test_a_recreated_node_stops_the_operation_and_says_so(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, READY)
    world.published()
    created = world.create_request("reboot")
    old_name = world.request_name
    until(world, "RebootScheduled")
    new_uid = recreate_node(world, kube)
    world.tick()
    state = world.state()
    op = state.operation
    assert op is not None and op.phase == "Interrupted"
    assert "deleted and created again" in op.message and new_uid in op.message
    assert "execution state" not in op.message
    # what is known is said: the restart it scheduled is still due
    assert "A shutdown is still scheduled" in op.message
    assert state.block is None  # not the execution-state-removed block
    assert state.seen_uid(created["metadata"]["uid"]) is not None
    # the request the dashboard waits on gets the outcome (the object of the old Node UID)
    status = old_status(kube, old_name)
    assert status["phase"] == "Interrupted" and status["message"] == op.message
    assert [e["event"] for e in world.journal()][-1] == "node-recreated"
    # and the new Node gets a report that names the stopped operation
    report = world.report()
    assert report is not None and report["nodeUid"] == new_uid
    assert report["operation"]["phase"] == "Interrupted"


def test_after_a_recreated_node_new_requests_are_taken_for_the_new_node(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, READY)
    plan = world.published()["plan"]
    world.create_request("prepare-gpu", planId=plan["id"], allowExperimental=True)
    until(world, "Registering")  # waits for the device plugin, nothing scheduled
    recreate_node(world, kube)
    world.tick()
    op = world.state().operation
    assert op is not None and op.phase == "Interrupted" and "created again" in op.message
    assert world.state().block is None
    # the worker goes on with the Node it has: a request for it (its new UID) is accepted
    world.tick()  # the report of the new Node, for the dashboard
    world.create_request("reboot")
    world.tick()
    now = world.state().operation
    assert now is not None and now.action == "reboot" and now.phase != "Rejected"
    assert world.phase() in ("Accepted", "RebootScheduled")


def test_a_node_that_is_gone_stops_the_operation_and_its_status_is_still_written(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, READY)
    plan = world.published()["plan"]
    world.create_request("prepare-gpu", planId=plan["id"], allowExperimental=True)
    name = world.request_name
    until(world, "Registering")
    # renamed: the kubelet registered the host under another name; this one answers 404
    kube.request("DELETE", f"/api/v1/nodes/{world.node_name}")
    kube.create_node(f"{world.node_name}-renamed", boot_id=world.boot_id,
                     kernel="7.0.0-31-generic")
    result = world.tick()
    assert result is not None
    op = world.state().operation
    assert op is not None and op.phase == "Interrupted"
    assert f"The Node {world.node_name} is no longer in the cluster" in op.message
    assert "renamed or deleted" in op.message
    assert world.state().block is None
    assert old_status(kube, name)["phase"] == "Interrupted"
    assert [e["event"] for e in world.journal()][-1] == "node-missing"
    assert f"the Node {world.node_name} is not in the cluster" in result.summary
    # a later tick has nothing more to say about the operation, and writes nothing twice
    events = len(world.journal())
    world.tick()
    assert len(world.journal()) == events
