"""The `kube` fixture's typed clients and kubeconfigs work as each user."""

from __future__ import annotations

import pytest

from tests.contract.helpers import GROUP, NAMESPACE, VERSION, fresh_name, hostop, valid_spec
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
    for path in (kube.admin_kubeconfig, kube.dashboard_kubeconfig, kube.worker_kubeconfig):
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
