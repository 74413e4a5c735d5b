"""The worker's Kubernetes port (magicstick_host.ports.kube.RealKube) against the real server.

Every test runs on both transports, the lean one (standard library) and the official client,
and the lean one also with a client certificate in the shape of K3s's admin kubeconfig (what
production uses).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from magicstick_host import schemas
from magicstick_host.domain import report_policy as rp
from magicstick_host.errors import (
    KubeConflictError,
    KubeNotFoundError,
    KubePermanentError,
    KubeTemporaryError,
)
from magicstick_host.ports.kube import RealKube, hostoperation_name
from tests.contract.helpers import HOSTOPS, NAMESPACE, fresh_name, hexs, hostop, valid_spec
from tests.kubeserver.fixtures import KubeCluster

pytestmark = pytest.mark.apiserver

ANNOTATION = "appliance.magicstick.dev/host-management"
KERNEL = "6.17.0-1012-oem"


# (transport, the worker's credential)
WAYS = {"lean": ("lean", "token"), "lean-cert": ("lean", "cert"), "official": ("official", "token")}


@pytest.fixture(params=WAYS.values(), ids=WAYS.keys())
def way(request: pytest.FixtureRequest) -> tuple[str, str]:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def transport(way: tuple[str, str]) -> str:
    return way[0]


@pytest.fixture
def worker_kubeconfig(kube: KubeCluster, way: tuple[str, str]) -> Path:
    return kube.worker_cert_kubeconfig if way[1] == "cert" else kube.worker_kubeconfig


@pytest.fixture
def worker(worker_kubeconfig: Path, transport: str) -> RealKube:
    port = RealKube(str(worker_kubeconfig), timeout=10, transport=transport)
    assert port.transport_name == transport
    return port


@pytest.fixture
def node(kube: KubeCluster) -> dict[str, Any]:
    return kube.create_node("node-" + hexs(8), boot_id=str(uuid.uuid4()), kernel=KERNEL,
                            allocatable={"amd.com/gpu": "1"})


def test_hostoperation_name_is_sha256_of_the_uid_as_json_string() -> None:
    uid = "3e1b7a9c-0d0e-4c1b-9a59-1f2e3d4c5b6a"
    expected = hashlib.sha256(('"' + uid + '"').encode()).hexdigest()[:24]
    assert hostoperation_name(uid) == "host-" + expected
    assert len(hostoperation_name(uid)) == 29


def test_read_node_returns_plain_json(worker: RealKube, node: dict[str, Any]) -> None:
    got = worker.read_node(node["metadata"]["name"])
    assert isinstance(got, dict)
    json.dumps(got)  # plain JSON, no client model objects
    assert got["metadata"]["uid"] == node["metadata"]["uid"]
    info = got["status"]["nodeInfo"]
    assert info["bootID"] == node["status"]["nodeInfo"]["bootID"]
    assert info["kernelVersion"] == KERNEL
    assert got["status"]["allocatable"]["amd.com/gpu"] == "1"


def test_missing_objects(worker: RealKube) -> None:
    with pytest.raises(KubeNotFoundError):
        worker.read_node("no-such-node-" + hexs(6))
    assert worker.get_hostoperation(NAMESPACE, fresh_name()) is None
    assert worker.get_module_activation(NAMESPACE, "absent-" + hexs(6)) is None


def test_unreachable_server_is_temporary(
    tmp_path: Path, worker_kubeconfig: Path, transport: str
) -> None:
    cfg = yaml.safe_load(worker_kubeconfig.read_text())
    cfg["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    path = tmp_path / "dead.kubeconfig"
    path.write_text(json.dumps(cfg))
    with pytest.raises(KubeTemporaryError):
        RealKube(str(path), timeout=2, transport=transport).read_node("x")


def test_missing_kubeconfig_is_permanent(tmp_path: Path, transport: str) -> None:
    with pytest.raises(KubePermanentError):
        RealKube(str(tmp_path / "absent.yaml"), transport=transport).read_node("x")


def test_forbidden_is_permanent(kube: KubeCluster, transport: str) -> None:
    dashboard = RealKube(str(kube.dashboard_kubeconfig), transport=transport)
    with pytest.raises(KubePermanentError, match="403"):
        dashboard.read_node("anything")


# -- the Node annotation -----------------------------------------------------------------------


def test_annotation_patch_with_right_uid_sets_only_that_annotation(
    kube: KubeCluster, worker: RealKube, node: dict[str, Any]
) -> None:
    name, uid = node["metadata"]["name"], node["metadata"]["uid"]
    kube._ok("PATCH", f"/api/v1/nodes/{name}",
             {"metadata": {"annotations": {"other/key": "kept"}, "labels": {"a": "b"}}},
             content_type="application/merge-patch+json")
    got = worker.patch_node_annotation(name, uid, ANNOTATION, '{"x":1}')
    assert got["metadata"]["annotations"][ANNOTATION] == '{"x":1}'
    after = kube.read_node(name)
    assert after["metadata"]["annotations"] == {"other/key": "kept", ANNOTATION: '{"x":1}'}
    assert after["metadata"]["labels"] == {"a": "b"}
    assert after["status"]["nodeInfo"] == node["status"]["nodeInfo"]


def test_annotation_patch_with_wrong_uid_is_a_conflict_and_changes_nothing(
    kube: KubeCluster, worker: RealKube, node: dict[str, Any]
) -> None:
    name = node["metadata"]["name"]
    with pytest.raises(KubeConflictError):
        worker.patch_node_annotation(name, str(uuid.uuid4()), ANNOTATION, "{}")
    assert ANNOTATION not in (kube.read_node(name)["metadata"].get("annotations") or {})


def test_the_report_round_trips_and_the_dashboard_finds_it_fresh(
    kube: KubeCluster, worker: RealKube, node: dict[str, Any]
) -> None:
    from tests.test_report_policy import report

    name, uid = node["metadata"]["name"], node["metadata"]["uid"]
    boot = node["status"]["nodeInfo"]["bootID"]
    current = worker.read_node(name)
    assert rp.may_publish(current, boot, KERNEL)[0]
    now = datetime.now(UTC).replace(microsecond=0)
    payload = report(observed=now, big=True)
    payload.update(nodeUid=uid, bootId=boot, kernel=KERNEL)
    value = rp.encode_report(payload)
    worker.patch_node_annotation(name, uid, ANNOTATION, value)

    read_back = worker.read_node(name)
    stored = read_back["metadata"]["annotations"][ANNOTATION]
    assert stored == value
    assert schemas.errors("report", json.loads(stored)) == []
    assert rp.dashboard_considers_fresh(stored, read_back, now) == (True, "fresh")
    # after a reboot the kubelet reports a new boot: the old report is no longer fresh
    rebooted = kube.set_node_info(name, boot_id=str(uuid.uuid4()))
    assert not rp.dashboard_considers_fresh(stored, rebooted, now)[0]
    assert not rp.may_publish(rebooted, boot, KERNEL)[0]


# -- HostOperation status ------------------------------------------------------------------------


def created_request(kube: KubeCluster, action: str = "reboot") -> dict[str, Any]:
    status, body = kube.request("POST", HOSTOPS, hostop(valid_spec(action)), user="dashboard")
    assert status == 201, body
    return body  # type: ignore[no-any-return]


def test_status_patch_goes_through_the_subresource_and_persists(
    kube: KubeCluster, worker: RealKube
) -> None:
    obj = created_request(kube)
    name, uid = obj["metadata"]["name"], obj["metadata"]["uid"]
    status = {"phase": "RebootScheduled", "message": "Rebooting in 1 minute.",
              "requestId": obj["spec"]["requestId"], "startedAt": "2026-11-30T12:00:00Z",
              "updatedAt": "2026-11-30T12:00:01Z", "bootId": obj["spec"]["bootId"],
              "rebootsUsed": 1, "rebootBudget": 1, "outcome": "pending"}
    out = worker.patch_hostoperation_status(NAMESPACE, name, status, uid=uid)
    assert out["status"] == status  # optional extras are kept
    stored = worker.get_hostoperation(NAMESPACE, name)
    assert stored is not None and stored["status"] == status
    assert stored["spec"] == obj["spec"]
    # the dashboard reads it back
    _, seen = kube.request("GET", f"{HOSTOPS}/{name}", user="dashboard")
    assert seen["status"]["phase"] == "RebootScheduled"
    # a later patch merges
    worker.patch_hostoperation_status(NAMESPACE, name, {"phase": "Succeeded"}, uid=uid)
    stored = worker.get_hostoperation(NAMESPACE, name)
    assert stored is not None and stored["status"]["phase"] == "Succeeded"
    assert stored["status"]["rebootsUsed"] == 1


def test_a_spec_sent_with_a_status_patch_is_ignored(kube: KubeCluster) -> None:
    obj = created_request(kube)
    path = f"{HOSTOPS}/{obj['metadata']['name']}/status"
    patch = {"spec": {"action": "poweroff", "bootId": "other"}, "status": {"phase": "Accepted"}}
    status, out = kube.request("PATCH", path, patch, user="worker",
                               content_type="application/merge-patch+json")
    assert status == 200, out
    assert out["spec"] == obj["spec"] and out["status"] == {"phase": "Accepted"}


def test_status_is_validated(kube: KubeCluster, worker: RealKube) -> None:
    obj = created_request(kube)
    name = obj["metadata"]["name"]
    with pytest.raises(KubePermanentError, match="phase"):
        worker.patch_hostoperation_status(NAMESPACE, name, {"phase": "Exploded"})
    with pytest.raises(KubePermanentError, match="message"):
        worker.patch_hostoperation_status(NAMESPACE, name,
                                          {"phase": "Failed", "message": "m" * 2049})
    worker.patch_hostoperation_status(NAMESPACE, name, {"phase": "Failed", "message": "m" * 2048})


def test_status_patch_for_a_replaced_request_is_a_conflict(
    kube: KubeCluster, worker: RealKube
) -> None:
    """The server ignores metadata.uid in a status patch, so the port checks it itself."""
    first = created_request(kube)
    name = first["metadata"]["name"]
    kube.delete_hostoperation(name, first["metadata"]["uid"])
    status, second = kube.request("POST", HOSTOPS, hostop(valid_spec("poweroff"), name),
                                  user="dashboard")
    assert status == 201
    with pytest.raises(KubeConflictError, match="replaced"):
        worker.patch_hostoperation_status(NAMESPACE, name, {"phase": "Succeeded"},
                                          uid=first["metadata"]["uid"])
    stored = worker.get_hostoperation(NAMESPACE, name)
    assert stored is not None and not stored.get("status")
    kube.delete_hostoperation(name, second["metadata"]["uid"])
    with pytest.raises(KubeNotFoundError):
        worker.patch_hostoperation_status(NAMESPACE, name, {"phase": "Succeeded"},
                                          uid=second["metadata"]["uid"])


def test_status_patch_with_a_stale_resource_version_is_a_conflict(
    kube: KubeCluster, worker: RealKube
) -> None:
    obj = created_request(kube)
    name, rv = obj["metadata"]["name"], obj["metadata"]["resourceVersion"]
    worker.patch_hostoperation_status(NAMESPACE, name, {"phase": "Accepted"}, rv)
    with pytest.raises(KubeConflictError):
        worker.patch_hostoperation_status(NAMESPACE, name, {"phase": "Failed"}, rv)
    stored = worker.get_hostoperation(NAMESPACE, name)
    assert stored is not None and stored["status"]["phase"] == "Accepted"


def test_the_request_for_a_node_is_found_by_its_derived_name(
    kube: KubeCluster, worker: RealKube, node: dict[str, Any]
) -> None:
    name = hostoperation_name(node["metadata"]["uid"])
    kube.create_hostoperation(name, valid_spec("reboot", nodeUid=node["metadata"]["uid"]))
    got = worker.get_hostoperation(NAMESPACE, name)
    assert got is not None and got["spec"]["nodeUid"] == node["metadata"]["uid"]


# -- ModuleActivation ----------------------------------------------------------------------------


def activation_spec(profile: str = "strix-halo") -> dict[str, Any]:
    return {"module": "amd-gpu", "enabled": True,
            "applianceRef": {"name": "local", "namespace": NAMESPACE},
            "parameters": {"compatibilityProfile": profile, "allowExperimental": "true",
                           "validationRequest": ""}}


def test_module_activation_create_get_and_patch_with_resource_version(worker: RealKube) -> None:
    name = "amd-gpu-" + hexs(6)
    created = worker.create_module_activation(
        NAMESPACE, {"metadata": {"name": name}, "spec": activation_spec()})
    assert created["spec"] == activation_spec()
    got = worker.get_module_activation(NAMESPACE, name)
    assert got is not None and got["metadata"]["uid"] == created["metadata"]["uid"]
    rv = got["metadata"]["resourceVersion"]
    patched = worker.patch_module_activation(NAMESPACE, name, activation_spec("strix-halo-x"), rv)
    assert patched["spec"]["parameters"]["compatibilityProfile"] == "strix-halo-x"
    # someone else's decision in between: the stale resourceVersion is refused
    with pytest.raises(KubeConflictError):
        worker.patch_module_activation(NAMESPACE, name, activation_spec("overwrite"), rv)
    again = worker.get_module_activation(NAMESPACE, name)
    assert again is not None
    assert again["spec"]["parameters"]["compatibilityProfile"] == "strix-halo-x"
    with pytest.raises(KubeConflictError):  # already exists
        worker.create_module_activation(NAMESPACE, {"metadata": {"name": name},
                                                    "spec": activation_spec()})


def test_module_activation_parameters_must_be_strings(worker: RealKube) -> None:
    spec = activation_spec()
    spec["parameters"]["allowExperimental"] = True
    with pytest.raises(KubePermanentError):
        worker.create_module_activation(NAMESPACE, {"metadata": {"name": "bad-" + hexs(6)},
                                                    "spec": spec})
