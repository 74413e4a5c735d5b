"""The dashboard's Role: hostoperations get, list, create, delete, and nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from tests.contract.helpers import HOSTOPS, MERGE, MODACTS, NAMESPACE, hostop, valid_spec
from tests.kubeserver.fixtures import KubeCluster

pytestmark = pytest.mark.apiserver


def review(kube: KubeCluster, user: str, verb: str, resource: str, group: str = "",
           subresource: str = "", namespace: str = NAMESPACE) -> bool:
    """SelfSubjectAccessReview as `user`: what the authorizer says, without side effects."""
    attrs: dict[str, Any] = {"verb": verb, "resource": resource, "group": group,
                             "namespace": namespace}
    if subresource:
        attrs["subresource"] = subresource
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attrs}}
    status, out = kube.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                               body, user=user)
    assert status == 201, out
    return bool(out["status"]["allowed"])


G = "appliance.magicstick.dev"


@pytest.mark.parametrize("verb", ["get", "list", "create", "delete"])
def test_dashboard_may_use_hostoperations(kube: KubeCluster, verb: str) -> None:
    assert review(kube, "dashboard", verb, "hostoperations", G)


@pytest.mark.parametrize(("verb", "resource", "group", "sub", "ns"), [
    ("update", "hostoperations", G, "", NAMESPACE),
    ("patch", "hostoperations", G, "", NAMESPACE),
    ("watch", "hostoperations", G, "", NAMESPACE),
    ("deletecollection", "hostoperations", G, "", NAMESPACE),
    ("patch", "hostoperations", G, "status", NAMESPACE),
    ("update", "hostoperations", G, "status", NAMESPACE),
    ("get", "hostoperations", G, "", "default"),
    ("create", "hostoperations", G, "", "kube-system"),
    ("patch", "nodes", "", "", ""),
    ("create", "pods", "", "", NAMESPACE),
    ("create", "pods", "", "exec", NAMESPACE),
    ("get", "secrets", "", "", NAMESPACE),
    ("list", "secrets", "", "", NAMESPACE),
    ("patch", "moduleactivations", G, "", NAMESPACE),
])
def test_dashboard_may_not(kube: KubeCluster, verb: str, resource: str, group: str, sub: str,
                           ns: str) -> None:
    assert not review(kube, "dashboard", verb, resource, group, sub, ns)


def test_dashboard_cannot_write_status_for_real(kube: KubeCluster) -> None:
    status, created = kube.request("POST", HOSTOPS, hostop(valid_spec("reboot")),
                                   user="dashboard")
    assert status == 201
    path = f"{HOSTOPS}/{created['metadata']['name']}"
    patch = {"status": {"phase": "Succeeded"}}
    assert kube.request("PATCH", path + "/status", patch, "dashboard", MERGE)[0] == 403
    assert kube.request("PATCH", path, patch, "dashboard", MERGE)[0] == 403
    _, stored = kube.request("GET", path, user="dashboard")
    assert not stored.get("status")


def test_dashboard_cannot_patch_nodes_create_pods_or_read_secrets(kube: KubeCluster) -> None:
    name = "dash-" + valid_spec("reboot")["requestId"][:8]
    kube.create_node(name, boot_id="b", kernel="k")
    patch = {"metadata": {"annotations": {"appliance.magicstick.dev/host-management": "{}"}}}
    assert kube.request("PATCH", f"/api/v1/nodes/{name}", patch, "dashboard", MERGE)[0] == 403
    assert kube.request("GET", f"/api/v1/nodes/{name}", user="dashboard")[0] == 403
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
           "spec": {"containers": [{"name": "x", "image": "busybox"}]}}
    assert kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", pod,
                        user="dashboard")[0] == 403
    assert kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}/secrets",
                        user="dashboard")[0] == 403
    assert kube.request("GET", MODACTS, user="dashboard")[0] == 403


WORKER_ACCESS: list[tuple[str, str, str, str, str, bool]] = [
    # verb, resource, group, subresource, namespace, allowed
    ("get", "hostoperations", G, "", NAMESPACE, True),
    ("patch", "hostoperations", G, "status", NAMESPACE, True),
    ("create", "hostoperations", G, "", NAMESPACE, False),
    ("delete", "hostoperations", G, "", NAMESPACE, False),
    ("patch", "hostoperations", G, "", NAMESPACE, False),
    ("patch", "moduleactivations", G, "", NAMESPACE, True),
    ("create", "moduleactivations", G, "", NAMESPACE, True),
    ("patch", "nodes", "", "", "", True),
    ("get", "appliances", G, "", NAMESPACE, True),
    ("patch", "appliances", G, "status", NAMESPACE, False),
    ("list", "modelactivations", G, "", "", True),
    ("create", "modelactivations", G, "", NAMESPACE, False),
    ("list", "models", "kubeai.org", "", "", True),
    ("delete", "models", "kubeai.org", "", NAMESPACE, False),
    ("list", "pods", "", "", "", True),
    ("create", "pods", "", "", NAMESPACE, False),
    ("get", "secrets", "", "", "host-management", True),
    ("list", "secrets", "", "", "host-management", True),
    ("delete", "secrets", "", "", "host-management", True),
    ("create", "secrets", "", "", "host-management", False),
    ("update", "secrets", "", "", "host-management", False),
    ("get", "secrets", "", "", NAMESPACE, False),
    ("list", "secrets", "", "", "", False),
]


@pytest.mark.parametrize("user", ["worker", "worker-cert"])
@pytest.mark.parametrize(("verb", "resource", "group", "sub", "ns", "allowed"), WORKER_ACCESS)
def test_worker_test_role_is_what_the_worker_touches(
    kube: KubeCluster, user: str, verb: str, resource: str, group: str, sub: str, ns: str,
    allowed: bool,
) -> None:
    assert review(kube, user, verb, resource, group, sub, ns) is allowed
