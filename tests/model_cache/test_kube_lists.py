"""The kube port's model-cache reads against the real apiserver: ModelActivations, KubeAI
Models and Pods of every namespace; a missing CRD is None, an error is "cannot tell"."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from magicstick_host.collect import model_workloads
from magicstick_host.collect.model_workloads import read_model_workloads
from magicstick_host.domain.cluster import APPLIANCE_API
from magicstick_host.domain.model_cache.blockers import find_blockers
from magicstick_host.ports import kube_lists
from magicstick_host.ports.kube import RealKube
from tests.kubeserver.fixtures import KubeCluster
from tests.model_cache.cluster import (
    MA,
    MODELS,
    PODS,
    create,
    drop_namespace,
    new_namespace,
    pod_body,
)

pytestmark = pytest.mark.apiserver

@pytest.fixture
def worker(kube: KubeCluster) -> RealKube:
    return RealKube(str(kube.worker_kubeconfig), timeout=10)


@pytest.fixture
def ns(kube: KubeCluster) -> Iterator[str]:
    name = new_namespace(kube)
    yield name
    drop_namespace(kube, name)


def test_lists_of_every_namespace(kube: KubeCluster, worker: RealKube, ns: str) -> None:
    node = f"node-{uuid.uuid4().hex[:6]}"
    create(kube, MA.format(ns=ns), {"apiVersion": "appliance.magicstick.dev/v1alpha1",
                                    "kind": "ModelActivation", "metadata": {"name": "qwen"},
                                    "spec": {"local": {"freetoken": {"gpuDevice": "node:far"}}}})
    create(kube, MODELS.format(ns=ns), {"apiVersion": "kubeai.org/v1", "kind": "Model",
                                        "metadata": {"name": "llama"}, "spec": {"url": "x"}})
    create(kube, PODS.format(ns=ns), pod_body("pending", labels={"app": "model"}))
    create(kube, PODS.format(ns=ns), pod_body("held", node=node, finalizer=True,
                                              labels={"app.kubernetes.io/name": "freetoken"}))
    code, out = kube.request("DELETE", PODS.format(ns=ns) + "/held")
    assert code == 200, out  # terminating: kept by its finalizer
    activations = worker.list_objects(APPLIANCE_API, "modelactivations")
    models = worker.list_objects("kubeai.org/v1", "models")
    pods = worker.list_objects("v1", "pods")
    assert activations is not None and models is not None and pods is not None
    assert f"{ns}/qwen" in {f"{a['metadata']['namespace']}/{a['metadata']['name']}"
                            for a in activations}
    assert f"{ns}/llama" in {f"{m['metadata']['namespace']}/{m['metadata']['name']}"
                             for m in models}
    mine = {p["metadata"]["name"]: p for p in pods if p["metadata"]["namespace"] == ns}
    assert set(mine) == {"pending", "held"}
    assert mine["held"]["metadata"].get("deletionTimestamp")
    found = find_blockers(read_model_workloads(worker), node)
    assert f"KubeAI Model {ns}/llama" in found.found
    assert f"ModelActivation {ns}/qwen" not in found.found  # pinned to another node
    assert {f"model Pod {ns}/pending", f"model Pod {ns}/held"} <= set(found.found)


@pytest.mark.parametrize("path", ["/", "//root", "/root/.cache//huggingface/./hub",
                                  "/root/.ollama/models/blobs", "/root/"])
def test_host_paths_as_the_server_stores_them_still_overlap(
    kube: KubeCluster, worker: RealKube, ns: str, path: str
) -> None:
    create(kube, PODS.format(ns=ns), pod_body("hp", node="elsewhere", host_path=path))
    found = find_blockers(read_model_workloads(worker), "this-node")
    assert f"Pod {ns}/hp (hostPath {path})" in found.found


def test_the_server_refuses_backsteps_in_a_host_path(kube: KubeCluster, ns: str) -> None:
    """`..` never reaches the worker from a real Pod (the pure tests normalise it anyway)."""
    code, out = kube.request("POST", PODS.format(ns=ns), pod_body("hp", host_path="/srv/../root"))
    assert code == 422 and "must not contain '..'" in out["message"], out


def test_paging_reads_every_page(kube: KubeCluster, worker: RealKube, ns: str,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(5):
        create(kube, PODS.format(ns=ns), pod_body(f"p{i}"))
    monkeypatch.setattr(kube_lists, "LIST_PAGE", 2)
    calls: list[Any] = []
    real = worker._request

    def counting(method: str, path: str, *a: Any, **kw: Any) -> Any:
        calls.append(kw.get("query"))
        return real(method, path, *a, **kw)

    monkeypatch.setattr(worker, "_request", counting)
    pods = worker.list_objects("v1", "pods") or []
    assert {f"p{i}" for i in range(5)} <= {p["metadata"]["name"] for p in pods}
    assert len(calls) >= 3 and all(("limit", "2") in q for q in calls)


def test_a_missing_crd_is_no_objects(kube: KubeCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """As the K3s admin kubeconfig the worker uses in production: a resource the server does
    not serve answers 404, and discovery agrees. (The test worker's RBAC answers 403 for a
    resource it has no rule for, which is "cannot tell", see below.)"""
    admin = RealKube(str(kube.admin_kubeconfig), timeout=10)
    assert admin.list_objects("nosuch.kubeai.org/v1", "models") is None
    assert admin.list_objects("kubeai.org/v1", "nosuchmodels") is None  # the group is served
    monkeypatch.setattr(model_workloads, "KUBEAI_MODELS", "nosuchmodels")
    workloads = read_model_workloads(admin)
    assert workloads.models is None and not workloads.error
    forbidden = read_model_workloads(RealKube(str(kube.worker_kubeconfig), timeout=10))
    assert "403" in forbidden.error


def test_errors_mean_cannot_tell(kube: KubeCluster, worker: RealKube) -> None:
    # the dashboard may not list pods: 403
    forbidden = read_model_workloads(RealKube(str(kube.dashboard_kubeconfig), timeout=10))
    assert forbidden.error and "403" in forbidden.error
    assert find_blockers(forbidden, "n").blocked
    with worker.budget(0.0):
        spent = read_model_workloads(worker)
    assert spent.error and "budget" in spent.error
    assert read_model_workloads(None).error
