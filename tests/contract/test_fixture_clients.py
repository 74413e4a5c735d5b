"""The `kube` fixture's typed clients and kubeconfigs work as each user."""

from __future__ import annotations

import base64
import contextlib

import pytest
import yaml

from magicstick_host.ports.kube import RealKube
from tests.contract.helpers import (
    GROUP,
    NAMESPACE,
    VERSION,
    fresh_name,
    hexs,
    hostop,
    valid_spec,
)
from tests.kubeserver.fixtures import KubeCluster

pytestmark = pytest.mark.apiserver


def test_typed_clients_per_user(kube: KubeCluster) -> None:
    from kubernetes.client.exceptions import ApiException

    name = fresh_name()
    created = kube.dashboard_custom().create_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, "hostoperations", hostop(valid_spec("poweroff"), name))
    assert created["metadata"]["name"] == name
    listed = kube.worker_custom().list_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, "hostoperations")
    assert name in [item["metadata"]["name"] for item in listed["items"]]
    with pytest.raises(ApiException) as info:
        kube.core("dashboard").list_node()
    assert info.value.status == 403
    assert kube.core("admin").read_namespace(NAMESPACE).metadata.name == NAMESPACE
    for path in (kube.admin_kubeconfig, kube.dashboard_kubeconfig, kube.worker_kubeconfig,
                 kube.worker_cert_kubeconfig, kube.admin_cert_kubeconfig):
        assert path.is_file() and (path.stat().st_mode & 0o077) == 0


def test_register_node_sets_status_through_the_subresource(kube: KubeCluster) -> None:
    node = kube.register_node("reg-" + fresh_name("")[:10], boot_id="boot-1", kernel="6.17.0-1",
                              allocatable={"nvidia.com/gpu": "2"})
    info = node["status"]["nodeInfo"]
    assert (info["bootID"], info["kernelVersion"]) == ("boot-1", "6.17.0-1")
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "2"
    assert node["metadata"]["uid"]
    # the typed client can deserialize it (all required nodeInfo fields are set)
    typed = kube.core("worker").read_node(node["metadata"]["name"])
    assert typed.status.node_info.boot_id == "boot-1"
    later = kube.set_node_info(node["metadata"]["name"], boot_id="boot-2")
    assert later["status"]["nodeInfo"]["bootID"] == "boot-2"
    assert later["status"]["nodeInfo"]["kernelVersion"] == "6.17.0-1"


# -- the worker by client certificate, in the shape of K3s's admin kubeconfig ------------------


def test_worker_cert_kubeconfig_has_the_shape_of_the_k3s_admin_kubeconfig(
    kube: KubeCluster,
) -> None:
    path = kube.worker_cert_kubeconfig
    assert (path.stat().st_mode & 0o077) == 0
    cfg = yaml.safe_load(path.read_text())
    assert set(cfg) == {"apiVersion", "clusters", "contexts", "current-context", "kind",
                        "preferences", "users"}
    ((cluster,), (context,), (user,)) = (cfg["clusters"], cfg["contexts"], cfg["users"])
    assert cluster["name"] == context["name"] == user["name"] == cfg["current-context"]
    assert cluster["cluster"]["server"] == f"https://127.0.0.1:{kube.server.port}"
    assert set(cluster["cluster"]) == {"certificate-authority-data", "server"}
    assert set(user["user"]) == {"client-certificate-data", "client-key-data"}
    assert base64.b64decode(cluster["cluster"]["certificate-authority-data"]).startswith(
        b"-----BEGIN CERTIFICATE-----")
    assert base64.b64decode(user["user"]["client-certificate-data"]).startswith(
        b"-----BEGIN CERTIFICATE-----")
    assert base64.b64decode(user["user"]["client-key-data"]).startswith(
        b"-----BEGIN EC PRIVATE KEY-----")


def test_a_get_as_worker_cert_works_as_the_worker_user(kube: KubeCluster) -> None:
    from kubernetes.client.exceptions import ApiException

    node = kube.create_node("cert-" + hexs(8), boot_id="boot-1", kernel="6.17.0-1")
    name = node["metadata"]["name"]
    typed = kube.core("worker-cert").read_node(name)
    assert typed.metadata.uid == node["metadata"]["uid"]
    listed = kube.custom("worker-cert").list_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, "hostoperations")
    assert isinstance(listed["items"], list)
    # the same RBAC as the token worker, no more
    with pytest.raises(ApiException) as info:
        kube.core("worker-cert").list_namespaced_secret(NAMESPACE)
    assert info.value.status == 403
    status, review = kube.request(
        "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        user="worker-cert")
    assert status == 201, review
    assert review["status"]["userInfo"]["username"] == "magicstick-host-worker"


def test_the_worker_port_loads_a_k3s_shaped_kubeconfig(kube: KubeCluster) -> None:
    node = kube.create_node("k3s-" + hexs(8), boot_id="boot-1", kernel="6.17.0-1")
    got = RealKube(str(kube.worker_cert_kubeconfig), timeout=10).read_node(
        node["metadata"]["name"])
    assert got["metadata"]["uid"] == node["metadata"]["uid"]


def test_admin_cert_is_the_k3s_admin(kube: KubeCluster) -> None:
    status, review = kube.request(
        "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        user="admin-cert")
    assert status == 201, review
    info = review["status"]["userInfo"]
    assert info["username"] == "system:admin" and "system:masters" in info["groups"]


# -- the test CRDs of what the worker reads (tests/crds) ----------------------------------------

APPLIANCES = f"/apis/{GROUP}/{VERSION}/namespaces/{NAMESPACE}/appliances"
MERGE = "application/merge-patch+json"


def amd_gpu_nodes(nodes: list[dict[str, object]]) -> dict[str, object]:
    return {"hardwareOperators": {"amd-gpu": {"phase": "Ready",
                                              "compatibility": {"nodes": nodes}}}}


def test_an_appliance_status_carries_the_operator_eligibility(kube: KubeCluster) -> None:
    name = "appliance-" + hexs(8)  # fresh: other tests own `local`
    status, _ = kube.request("POST", APPLIANCES, {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Appliance",
        "metadata": {"name": name, "namespace": NAMESPACE}, "spec": {"profile": "edge"}})
    assert status == 201
    entry = {"nodeUid": "uid-1", "hostBootId": "boot-1", "hostFingerprint": "f" * 64,
             "eligible": True, "hostDriverReady": True, "resourceRegistered": True,
             "profile": "strix-halo"}
    status, body = kube.request("PATCH", f"{APPLIANCES}/{name}/status",
                                {"status": amd_gpu_nodes([entry])}, content_type=MERGE)
    assert status == 200, body
    read = kube.custom("worker").get_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, "appliances", name)
    assert read["status"]["hardwareOperators"]["amd-gpu"]["compatibility"]["nodes"] == [entry]
    assert read["status"]["hardwareOperators"]["amd-gpu"]["phase"] == "Ready"
    # the worker's fields are typed as it reads them: a string "true" is not a boolean
    status, body = kube.request("PATCH", f"{APPLIANCES}/{name}/status",
                                {"status": amd_gpu_nodes([{**entry, "eligible": "true"}])},
                                content_type=MERGE)
    assert status == 422 and "eligible" in str(body)


def test_the_model_serving_objects_are_readable_in_every_namespace(kube: KubeCluster) -> None:
    from kubernetes.client.exceptions import ApiException

    namespace = "models-" + hexs(8)
    kube.core("admin").create_namespace({"metadata": {"name": namespace}})
    activation = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelActivation",
                  "metadata": {"name": "qwen", "namespace": namespace},
                  "spec": {"enabled": True, "type": "local", "model": "qwen3",
                           "local": {"freetoken": {"gpuDevice": "node:box-1", "slots": 2}}}}
    minimal = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelActivation",
               "metadata": {"name": "defaults", "namespace": namespace}, "spec": {}}
    model = {"apiVersion": "kubeai.org/v1", "kind": "Model",
             "metadata": {"name": "llama", "namespace": namespace},
             "spec": {"url": "hf://example/llama", "minReplicas": 0}}
    admin = kube.custom("admin")
    try:
        for obj in (activation, minimal):
            admin.create_namespaced_custom_object(GROUP, VERSION, namespace, "modelactivations",
                                                  obj)
        admin.create_namespaced_custom_object("kubeai.org", "v1", namespace, "models", model)
        worker = kube.custom("worker")
        found = worker.list_cluster_custom_object(GROUP, VERSION, "modelactivations")["items"]
        mine = {o["metadata"]["name"]: o["spec"] for o in found
                if o["metadata"]["namespace"] == namespace}
        assert mine == {"qwen": activation["spec"], "defaults": {}}  # no defaults, nothing pruned
        models = worker.list_cluster_custom_object("kubeai.org", "v1", "models")["items"]
        assert [m["spec"] for m in models if m["metadata"]["namespace"] == namespace] == [
            model["spec"]]
        status, body = kube.request("POST", f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/"
                                    "modelactivations", {**minimal, "spec": {"enabled": "yes"}})
        assert status == 422 and "enabled" in str(body)
    finally:
        # a shared apiserver runs no namespace controller: what a test leaves stays for the
        # next one's cluster-wide lists (the model-cache blockers read them)
        for name in ("qwen", "defaults"):
            with contextlib.suppress(ApiException):
                admin.delete_namespaced_custom_object(GROUP, VERSION, namespace,
                                                      "modelactivations", name)
        with contextlib.suppress(ApiException):
            admin.delete_namespaced_custom_object("kubeai.org", "v1", namespace, "models",
                                                  "llama")
    assert kube.request("GET", "/api/v1/pods", user="worker")[0] == 200
