"""Model-serving objects on the real test apiserver, as the appliance's controllers make them:
the blockers of clear-model-cache (model-cache.md, "Blockers")."""

from __future__ import annotations

import uuid
from typing import Any

from tests.kubeserver.fixtures import KubeCluster

MA = "/apis/appliance.magicstick.dev/v1alpha1/namespaces/{ns}/modelactivations"
MODELS = "/apis/kubeai.org/v1/namespaces/{ns}/models"
PODS = "/api/v1/namespaces/{ns}/pods"
HOLD = "test.magicstick.dev/hold"


def create(kube: KubeCluster, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, out = kube.request("POST", path, body)
    assert code == 201, out
    assert isinstance(out, dict)
    return out


def new_namespace(kube: KubeCluster) -> str:
    name = f"mc-{uuid.uuid4().hex[:8]}"
    create(kube, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": name}})
    return name


def drop_namespace(kube: KubeCluster, ns: str) -> None:
    """Delete every object made here, then the namespace. The test apiserver has no kubelet
    and no namespace controller: a scheduled Pod's graceful deletion would never finish and
    a deleted namespace would keep its objects, so Pods are released from their finalizers
    and deleted at once, each kind explicitly."""
    code, pods = kube.request("GET", PODS.format(ns=ns))
    for item in (pods or {}).get("items", []) if code == 200 else []:
        path = PODS.format(ns=ns) + "/" + item["metadata"]["name"]
        kube.request("PATCH", path, {"metadata": {"finalizers": None}},
                     content_type="application/merge-patch+json")
        kube.request("DELETE", path, {"apiVersion": "v1", "kind": "DeleteOptions",
                                      "gracePeriodSeconds": 0})
    for path in (MA, MODELS):
        kube.request("DELETE", path.format(ns=ns))  # the whole collection
    code, left = kube.request("GET", PODS.format(ns=ns))
    assert code == 200 and not left["items"], left
    kube.request("DELETE", f"/api/v1/namespaces/{ns}")


def activation(kube: KubeCluster, ns: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return create(kube, MA.format(ns=ns), {"apiVersion": "appliance.magicstick.dev/v1alpha1",
                                           "kind": "ModelActivation", "metadata": {"name": name},
                                           "spec": spec})


def kubeai_model(kube: KubeCluster, ns: str, name: str) -> dict[str, Any]:
    return create(kube, MODELS.format(ns=ns), {"apiVersion": "kubeai.org/v1", "kind": "Model",
                                               "metadata": {"name": name},
                                               "spec": {"url": "hf://Qwen/Qwen3-8B",
                                                        "minReplicas": 0}})


def pod_body(name: str, *, node: str = "", labels: dict[str, str] | None = None,
             host_path: str | None = None, finalizer: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels or {}}
    if finalizer:
        meta["finalizers"] = [HOLD]
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "example.invalid/x:1"}]}
    if node:
        spec["nodeName"] = node
    if host_path is not None:
        spec["volumes"] = [{"name": "v", "hostPath": {"path": host_path}}]
        spec["containers"][0]["volumeMounts"] = [{"name": "v", "mountPath": "/data"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def pod(kube: KubeCluster, ns: str, name: str, **kw: Any) -> dict[str, Any]:
    return create(kube, PODS.format(ns=ns), pod_body(name, **kw))


def terminating_pod(kube: KubeCluster, ns: str, name: str, **kw: Any) -> dict[str, Any]:
    """A Pod being deleted, kept by a finalizer (as a kubelet still stopping it would)."""
    pod(kube, ns, name, finalizer=True, **kw)
    code, out = kube.request("DELETE", PODS.format(ns=ns) + "/" + name)
    assert code == 200, out
    assert isinstance(out, dict)
    return out


def clear_model_workloads(kube: KubeCluster) -> None:
    """No model-serving object anywhere: each cleanup test starts from a fresh cluster (the
    session's apiserver is shared, and an unpinned ModelActivation left by any test would
    block every node). Deletes every ModelActivation and KubeAI Model, and every Pod that a
    blocker rule could match (a model label, or any hostPath)."""
    for path in ("/apis/appliance.magicstick.dev/v1alpha1/modelactivations",
                 "/apis/kubeai.org/v1/models"):
        code, found = kube.request("GET", path)
        assert code == 200, found
        for item in found["items"]:
            meta = item["metadata"]
            plural = path.rsplit("/", 1)[1]
            kube.request("DELETE", f"{path.rsplit('/', 1)[0]}/namespaces/{meta['namespace']}/"
                         f"{plural}/{meta['name']}")
    code, pods = kube.request("GET", "/api/v1/pods")
    assert code == 200, pods
    for item in pods["items"]:
        labels = item["metadata"].get("labels") or {}
        volumes = (item.get("spec") or {}).get("volumes") or []
        if not (labels.get("app") == "model" or labels.get("app.kubernetes.io/name")
                == "freetoken" or any("hostPath" in v for v in volumes)):
            continue
        path = PODS.format(ns=item["metadata"]["namespace"]) + "/" + item["metadata"]["name"]
        kube.request("PATCH", path, {"metadata": {"finalizers": None}},
                     content_type="application/merge-patch+json")
        kube.request("DELETE", path, {"apiVersion": "v1", "kind": "DeleteOptions",
                                      "gracePeriodSeconds": 0})
