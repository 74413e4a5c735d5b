"""The model-serving objects the model-cache blockers are judged on, read from Kubernetes.

Three lists (ModelActivations, KubeAI Models, Pods), all namespaces. A missing CRD is an empty
list's equivalent (None); any error reading them is kept as `Workloads.error`: the caller cannot
tell whether a model is running, which blocks the cleanup and withdraws the capability.
"""

from __future__ import annotations

from magicstick_host.domain.model_cache_blockers import Workloads
from magicstick_host.errors import KubeError
from magicstick_host.ports.kube import KubePort


def read_model_workloads(kube: KubePort | None) -> Workloads:
    if kube is None:
        return Workloads(error="no Kubernetes client")
    try:
        activations = kube.list_model_activations()
        models = kube.list_kubeai_models()
        pods = kube.list_pods()
    except KubeError as exc:
        return Workloads(error=str(exc)[:300])
    return Workloads(
        activations=tuple(activations) if activations is not None else None,
        models=tuple(models) if models is not None else None,
        pods=tuple(pods),
    )
