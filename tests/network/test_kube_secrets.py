"""The request-Secret calls of the Kubernetes port against the real apiserver, on both
transports: the dashboard creates the Secret (its own RBAC), the worker reads it, lists this
node's, and deletes it only with the right UID."""

from __future__ import annotations

import base64
import json
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from magicstick_host.domain.network.request import (
    NODE_LABEL,
    REQUEST_ID_LABEL,
    SECRET_NAMESPACE,
    SECRET_TYPE,
    NetworkRef,
    RequestSettings,
    read_request_secret,
    stale_request_secrets,
)
from magicstick_host.errors import KubeConflictError, KubeNotFoundError, KubeTemporaryError
from magicstick_host.ports.kube import RealKube
from tests.kubeserver.fixtures import KubeCluster

pytestmark = pytest.mark.apiserver


def create_request_secret(
    kube: KubeCluster, request_id: str, node_uid: str, settings: Any, **overrides: Any
) -> dict[str, Any]:
    """As the dashboard does: immutable, typed, labelled, settings.json in base64."""
    body: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": f"host-network-{request_id}", "namespace": SECRET_NAMESPACE,
                     "labels": {REQUEST_ID_LABEL: request_id, NODE_LABEL: node_uid}},
        "immutable": True,
        "type": SECRET_TYPE,
        "data": {"settings.json": base64.b64encode(json.dumps(settings).encode()).decode()},
    }
    body.update(overrides)
    status, out = kube.request("POST", f"/api/v1/namespaces/{SECRET_NAMESPACE}/secrets", body,
                               user="dashboard")
    assert status == 201, out
    assert isinstance(out, dict)
    return out


@pytest.fixture(params=["lean", "official"])
def worker(kube: KubeCluster, request: pytest.FixtureRequest) -> RealKube:
    return RealKube(str(kube.worker_kubeconfig), timeout=10, transport=request.param)


def test_read_list_and_delete_with_a_uid_precondition(kube: KubeCluster, worker: RealKube) -> None:
    request_id, node_uid = secrets.token_hex(16), f"node-{secrets.token_hex(8)}"
    created = create_request_secret(kube, request_id, node_uid, {"interface": "wlp3s0"})
    name, uid = created["metadata"]["name"], created["metadata"]["uid"]
    found = worker.get_secret(SECRET_NAMESPACE, name)
    assert found is not None
    read = read_request_secret(found, NetworkRef(name, uid), request_id=request_id,
                               node_uid=node_uid)
    assert isinstance(read, RequestSettings) and read.settings == {"interface": "wlp3s0"}
    listed = worker.list_secrets(SECRET_NAMESPACE, f"{NODE_LABEL}={node_uid}")
    assert [s["metadata"]["uid"] for s in listed] == [uid]
    with pytest.raises(KubeConflictError):
        worker.delete_secret(SECRET_NAMESPACE, name, "0b1a7f4e-0000-4000-8000-000000000000")
    assert worker.get_secret(SECRET_NAMESPACE, name) is not None
    worker.delete_secret(SECRET_NAMESPACE, name, uid)
    assert worker.get_secret(SECRET_NAMESPACE, name) is None
    with pytest.raises(KubeNotFoundError):
        worker.delete_secret(SECRET_NAMESPACE, name, uid)
    assert worker.get_secret(SECRET_NAMESPACE, "host-network-" + "0" * 32) is None


def test_a_replaced_secret_is_not_deleted(kube: KubeCluster, worker: RealKube) -> None:
    request_id, node_uid = secrets.token_hex(16), f"node-{secrets.token_hex(8)}"
    first = create_request_secret(kube, request_id, node_uid, {"a": 1})
    name = first["metadata"]["name"]
    status, _ = kube.request("DELETE", f"/api/v1/namespaces/{SECRET_NAMESPACE}/secrets/{name}",
                             user="dashboard")
    assert status == 200
    second = create_request_secret(kube, request_id, node_uid, {"a": 2})
    with pytest.raises(KubeConflictError):
        worker.delete_secret(SECRET_NAMESPACE, name, first["metadata"]["uid"])
    assert worker.get_secret(SECRET_NAMESPACE, name)["metadata"]["uid"] == (  # type: ignore[index]
        second["metadata"]["uid"])


def test_the_server_keeps_the_secret_immutable(kube: KubeCluster) -> None:
    request_id, node_uid = secrets.token_hex(16), f"node-{secrets.token_hex(8)}"
    created = create_request_secret(kube, request_id, node_uid, {"a": 1})
    name = created["metadata"]["name"]
    status, out = kube.request(
        "PATCH", f"/api/v1/namespaces/{SECRET_NAMESPACE}/secrets/{name}",
        {"data": {"settings.json": base64.b64encode(b"{}").decode()}},
        content_type="application/merge-patch+json")
    assert status == 422, out


def test_stale_secrets_of_a_node_are_found_by_label(kube: KubeCluster, worker: RealKube) -> None:
    node_uid = f"node-{secrets.token_hex(8)}"
    ids = [secrets.token_hex(16) for _ in range(2)]
    made = [create_request_secret(kube, rid, node_uid, {"n": i}) for i, rid in enumerate(ids)]
    listed = worker.list_secrets(SECRET_NAMESPACE, f"{NODE_LABEL}={node_uid}")
    later = datetime.now(UTC).replace(microsecond=0)
    stale = stale_request_secrets(listed, node_uid=node_uid, now=later + timedelta(minutes=11))
    assert sorted(uid for _, uid in stale) == sorted(m["metadata"]["uid"] for m in made)
    assert stale_request_secrets(listed, node_uid=node_uid, now=later) == []
    for name, uid in stale:
        worker.delete_secret(SECRET_NAMESPACE, name, uid)
    assert worker.list_secrets(SECRET_NAMESPACE, f"{NODE_LABEL}={node_uid}") == []


def test_the_calls_are_bounded_by_the_budget(kube: KubeCluster) -> None:
    port = RealKube(str(kube.worker_kubeconfig), timeout=10, budget_s=0)
    with pytest.raises(KubeTemporaryError, match="budget"):
        port.get_secret(SECRET_NAMESPACE, "host-network-" + "1" * 32)
    with pytest.raises(KubeTemporaryError, match="budget"):
        port.list_secrets(SECRET_NAMESPACE, f"{NODE_LABEL}=x")
    with pytest.raises(KubeTemporaryError, match="budget"):
        port.delete_secret(SECRET_NAMESPACE, "host-network-" + "1" * 32, "u")
