"""A status write the server refuses never freezes the report or the local operation.

A cluster still serving an older HostOperation CRD (no `Registering`, no extra status fields)
answers 422 to this worker's status; an RBAC slip answers 403. Both run on a second real
apiserver of their own, so the shared one keeps the current CRD and RBAC.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from magicstick_host.app_console import status_document
from magicstick_host.domain.report_policy import dashboard_considers_fresh
from magicstick_host.domain.status_view import render_status
from tests.harness.world import World
from tests.kubeserver import build
from tests.kubeserver.fixtures import KubeCluster, apiserver_unavailable
from tests.kubeserver.harness import REPO, KubeServer

pytestmark = pytest.mark.apiserver

ANNOTATION = "appliance.magicstick.dev/host-management"
CRD_FILE = REPO / "playbooks/files/manifests/magicstick-host-10-hostoperation-crd.yaml"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
ROLE_PATH = "/apis/rbac.authorization.k8s.io/v1/clusterroles/magicstick-host-worker-test"
READY = "strix-halo-ubuntu-26.04-ready"


def older_crd(current: dict[str, Any]) -> dict[str, Any]:
    """The CRD as an older cluster serves it: no Registering/Validating, status fields pruned."""
    crd = copy.deepcopy(current)
    status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    status.pop("x-kubernetes-preserve-unknown-fields", None)
    phases = status["properties"]["phase"]["enum"]
    status["properties"]["phase"]["enum"] = [
        p for p in phases if p not in ("Registering", "Validating")
    ]
    for extra in ("confirmationDeadline",):
        status["properties"].pop(extra, None)
    return crd


@pytest.fixture(scope="module")
def old_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    try:
        build.ensure_binary()
    except build.GoMissingError as exc:
        apiserver_unavailable(str(exc))
    server = KubeServer(Path(tmp_path_factory.mktemp("old-cluster")))
    server.start()
    try:
        cluster = KubeCluster(server)
        shipped = yaml.safe_load(CRD_FILE.read_text())
        code, live = cluster.request("GET", CRD_PATH + shipped["metadata"]["name"])
        assert code == 200, live
        downgraded = older_crd(live)
        code, body = cluster.request("PUT", CRD_PATH + shipped["metadata"]["name"], downgraded)
        assert code == 200, body
        yield cluster
    finally:
        server.stop()


def fresh(world: World, cluster: KubeCluster) -> tuple[bool, str]:
    node = cluster.read_node(world.node_name)
    value = (node["metadata"].get("annotations") or {}).get(ANNOTATION, "")
    return dashboard_considers_fresh(value, node, world.clock.now().wall)


def test_an_older_crd_refuses_registering_and_the_operation_still_succeeds(
    tmp_path: Path, old_cluster: KubeCluster
) -> None:
    world = World(tmp_path, old_cluster, READY)
    plan = world.published()["plan"]
    world.create_request("prepare-gpu", planId=plan["id"], allowExperimental=True)
    refused_seen = False
    for _ in range(12):
        world.tick()
        assert fresh(world, old_cluster) == (True, "fresh")
        op = world.state().operation
        if op is not None and op.phase == "Registering":
            # the server's answer is recorded, and this status is not sent again
            if "422" in op.status_refused and not refused_seen:
                refused_seen = True
                # the console shows it
                doc = status_document(str(world.state_dir), world.node_name)
                assert "422" in doc["operation"]["statusRefused"]
                assert "NOT IN KUBERNETES" in render_status(doc)
            world.registered()
        if op is not None and op.terminal:
            break
    op = world.state().operation
    assert op is not None and op.phase == "Succeeded", op
    assert refused_seen
    assert world.phase() == "Succeeded"  # the old CRD knows Succeeded: the final status lands
    assert op.status_refused == ""
    events = [e["event"] for e in world.journal()]
    assert "status-refused" in events


@pytest.fixture
def worker_may_not_write_status(old_cluster: KubeCluster) -> Iterator[None]:
    code, role = old_cluster.request("GET", ROLE_PATH)
    assert code == 200, role
    denied = copy.deepcopy(role)
    denied["rules"] = [
        r for r in role["rules"] if "hostoperations/status" not in r.get("resources", [])
    ]
    code, body = old_cluster.request("PUT", ROLE_PATH, denied)
    assert code == 200, body
    try:
        yield
    finally:
        code, current = old_cluster.request("GET", ROLE_PATH)
        restored = {**role, "metadata": current["metadata"]}
        old_cluster.request("PUT", ROLE_PATH, restored)


def test_a_403_on_every_status_write_keeps_the_report_fresh_for_ten_minutes(
    tmp_path: Path, old_cluster: KubeCluster, worker_may_not_write_status: None
) -> None:
    world = World(tmp_path, old_cluster, READY)
    world.create_request("reboot")
    start = world.clock.now().wall
    refusals = 0
    while (world.clock.now().wall - start).total_seconds() < 660:
        world.tick(advance_s=15.5)
        assert fresh(world, old_cluster) == (True, "fresh")
        op = world.state().operation
        assert op is not None
        refusals += "403" in op.status_refused
    op = world.state().operation
    assert op is not None
    # the local operation went on without its status: scheduled, then failed for want of a boot
    assert op.phase == "Failed" and "No new boot" in op.message
    assert world.effects("shutdown") and len(world.effects("shutdown")) == 1
    assert refusals > 0
    assert ((world.hostop() or {}).get("status") or {}) == {}


# last in this module: it removes the Appliance CRD from this second cluster
def test_without_an_operator_the_allocatable_gpu_decides_and_the_message_says_so(
    tmp_path: Path, old_cluster: KubeCluster
) -> None:
    code, body = old_cluster.request("DELETE", CRD_PATH + "appliances.appliance.magicstick.dev")
    assert code == 200, body
    world = World(tmp_path, old_cluster, READY)
    plan = world.published()["plan"]
    world.create_request("prepare-gpu", planId=plan["id"], allowExperimental=True)
    for _ in range(12):
        world.tick()
        op = world.state().operation
        if op is not None and op.phase == "Registering":
            world.device_plugin()
        if op is not None and op.terminal:
            break
    op = world.state().operation
    assert op is not None and op.phase == "Succeeded", op
    assert "not confirmed by an operator" in op.message
