"""RBAC as the real apiserver enforces it (contract.md, "Dashboard RBAC").

The dashboard: hostoperations get, list, create, delete, patch in ai-system; secrets create, get,
delete in host-management; and nothing more (no status, no Nodes, no Pods, no exec, no Secret
list or update). The test worker: what worker-rbac.yaml grants, for the token and the
certificate user alike."""

from __future__ import annotations

from typing import Any

import pytest

from tests.contract import cases
from tests.contract.helpers import HOSTOPS, MERGE, MODACTS, NAMESPACE, hexs, hostop, valid_spec
from tests.kubeserver.fixtures import KubeCluster

pytestmark = pytest.mark.apiserver


def review(kube: KubeCluster, user: str, verb: str, resource: str, group: str = "",
           subresource: str = "", namespace: str = NAMESPACE) -> bool:
    """SelfSubjectAccessReview as `user`: what the authorizer says, without side effects."""
    def call(method: str, path: str, body: Any, content_type: str) -> tuple[int, Any]:
        return kube.request(method, path, body, user, content_type)

    return cases.review(call, verb, resource, group, subresource, namespace)


G = cases.G
CREDENTIALS = "host-management"
SECRETS = f"/api/v1/namespaces/{CREDENTIALS}/secrets"
VERBS = cases.VERBS
DASHBOARD_GRANTS = {
    **{(NAMESPACE, g, r): set(v) for (g, r), v in cases.DASHBOARD_HOSTOPERATIONS.items()},
    **{(CREDENTIALS, g, r): set(v) for (g, r), v in cases.DASHBOARD_SECRETS.items()},
}
# What every authenticated user may do anyway (system:basic-user and friends)
BASELINE_GROUPS = {"authorization.k8s.io", "authentication.k8s.io"}


def rules_in(kube: KubeCluster, user: str, namespace: str) -> dict[tuple[str, str], set[str]]:
    """SelfSubjectRulesReview: (group, resource) -> verbs, without the authenticated baseline."""
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
            "spec": {"namespace": namespace}}
    status, out = kube.request(
        "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", body, user=user)
    assert status == 201, out
    found: dict[tuple[str, str], set[str]] = {}
    for rule in out["status"]["resourceRules"]:
        for group in rule.get("apiGroups", [""]):
            if group in BASELINE_GROUPS:
                continue
            for resource in rule["resources"]:
                found.setdefault((group, resource), set()).update(rule["verbs"])
    return found


@pytest.mark.parametrize("namespace", [NAMESPACE, CREDENTIALS, "default", "kube-system",
                                       "identity-system"])
def test_dashboard_has_exactly_its_grants(kube: KubeCluster, namespace: str) -> None:
    expected = {(g, r): verbs for (ns, g, r), verbs in DASHBOARD_GRANTS.items()
                if ns == namespace}
    assert rules_in(kube, "dashboard", namespace) == expected


MATRIX = [(ns, g, r, sub, verb)
          for ns, g, r, sub in [
              (NAMESPACE, G, "hostoperations", ""),
              (NAMESPACE, G, "hostoperations", "status"),
              ("default", G, "hostoperations", ""),
              (CREDENTIALS, "", "secrets", ""),
              (NAMESPACE, "", "secrets", ""),
              ("", "", "nodes", ""),
              ("", "", "nodes", "status"),
              (NAMESPACE, "", "pods", ""),
              (NAMESPACE, "", "pods", "exec"),
              (CREDENTIALS, "", "pods", "exec"),
              (NAMESPACE, G, "moduleactivations", ""),
              (NAMESPACE, G, "appliances", ""),
          ]
          for verb in VERBS]


@pytest.mark.parametrize(("ns", "group", "resource", "sub", "verb"), MATRIX,
                         ids=[f"{v}-{r}{'/' + s if s else ''}@{n or 'cluster'}"
                              for n, _, r, s, v in MATRIX])
def test_dashboard_may_do_only_what_is_granted(
    kube: KubeCluster, ns: str, group: str, resource: str, sub: str, verb: str
) -> None:
    allowed = not sub and verb in DASHBOARD_GRANTS.get((ns, group, resource), set())
    assert review(kube, "dashboard", verb, resource, group, sub, ns) is allowed


def test_dashboard_cannot_write_status_for_real(kube: KubeCluster) -> None:
    status, created = kube.request("POST", HOSTOPS, hostop(valid_spec("reboot")),
                                   user="dashboard")
    assert status == 201
    path = f"{HOSTOPS}/{created['metadata']['name']}"
    patch = {"status": {"phase": "Succeeded"}}
    assert kube.request("PATCH", path + "/status", patch, "dashboard", MERGE)[0] == 403
    # a patch of the main resource is allowed, but status changes there are ignored
    status, body = kube.request("PATCH", path, patch, "dashboard", MERGE)
    assert status == 200, body
    _, stored = kube.request("GET", path, user="dashboard")
    assert not stored.get("status")


def test_dashboard_cannot_patch_nodes_create_pods_or_read_other_secrets(
    kube: KubeCluster,
) -> None:
    name = "dash-" + hexs(8)
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


def network_secret(name: str) -> dict[str, Any]:
    return cases.network_secret(name, CREDENTIALS)


def test_dashboard_writes_a_network_request_secret_and_nothing_more(kube: KubeCluster) -> None:
    name = "host-network-" + hexs(32)
    status, created = kube.request("POST", SECRETS, network_secret(name), user="dashboard")
    assert status == 201, created
    path = f"{SECRETS}/{name}"
    assert kube.request("GET", path, user="dashboard")[0] == 200
    assert kube.request("GET", SECRETS, user="dashboard")[0] == 403  # no list
    assert kube.request("PUT", path, created, user="dashboard")[0] == 403  # no update
    assert kube.request("PATCH", path, {"metadata": {"labels": {"x": "y"}}}, "dashboard",
                        MERGE)[0] == 403
    assert kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/secrets",
                        network_secret(name) | {"metadata": {"name": name}},
                        user="dashboard")[0] == 403
    gone = {"apiVersion": "v1", "kind": "DeleteOptions",
            "preconditions": {"uid": created["metadata"]["uid"]}}
    assert kube.request("DELETE", path, gone, user="dashboard")[0] == 200
    assert kube.request("GET", path, user="dashboard")[0] == 404


def test_dashboard_patches_only_the_confirmation_annotation(kube: KubeCluster) -> None:
    status, created = kube.request("POST", HOSTOPS, hostop(valid_spec("configure-network")),
                                   user="dashboard")
    assert status == 201
    path = f"{HOSTOPS}/{created['metadata']['name']}"
    patch = {"metadata": {"annotations": {"appliance.magicstick.dev/network-confirmed": "1"}}}
    assert kube.request("PATCH", path, patch, "dashboard", MERGE)[0] == 200
    status, body = kube.request("PATCH", path, {"spec": {"planId": "f" * 64}}, "dashboard", MERGE)
    assert status == 422 and "immutable" in str(body)


WORKER_ACCESS = cases.worker_access(NAMESPACE, CREDENTIALS)


@pytest.mark.parametrize("user", ["worker", "worker-cert"])
@pytest.mark.parametrize(("verb", "resource", "group", "sub", "ns", "allowed"), WORKER_ACCESS)
def test_worker_test_role_is_what_the_worker_touches(
    kube: KubeCluster, user: str, verb: str, resource: str, group: str, sub: str, ns: str,
    allowed: bool,
) -> None:
    assert review(kube, user, verb, resource, group, sub, ns) is allowed
