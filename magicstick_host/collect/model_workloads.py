"""The model-serving objects the model-cache blockers are judged on, read from Kubernetes.

Three lists (ModelActivations, KubeAI Models, Pods), all namespaces. A missing CRD is an empty
list's equivalent (None); any error reading them is kept as `Workloads.error`: the caller cannot
tell whether a model is running, which blocks the cleanup and withdraws the capability.

A Pod's hostPath is also judged by where it leads on this host: `/data/models` may be a symlink
to a cache root, and the kubelet follows it when it mounts (`resolve_host_paths`).
"""

from __future__ import annotations

from magicstick_host.domain.cluster import APPLIANCE_API
from magicstick_host.domain.model_cache.blockers import Workloads, all_host_paths
from magicstick_host.errors import KubeError, KubeNotFoundError
from magicstick_host.ports.hosttree import HostTree, TreeError
from magicstick_host.ports.kube import KubePort

MODELACTIVATIONS = "modelactivations"
KUBEAI_API = "kubeai.org/v1"
KUBEAI_MODELS = "models"


def read_model_workloads(kube: KubePort | None) -> Workloads:
    if kube is None:
        return Workloads(error="no Kubernetes client")
    try:
        activations = kube.list_objects(APPLIANCE_API, MODELACTIVATIONS)
        models = kube.list_objects(KUBEAI_API, KUBEAI_MODELS)
        pods = kube.list_objects("v1", "pods")
        if pods is None:
            raise KubeNotFoundError("the cluster serves no Pods")
    except KubeError as exc:
        return Workloads(error=str(exc)[:300])
    return Workloads(
        activations=tuple(activations) if activations is not None else None,
        models=tuple(models) if models is not None else None,
        pods=tuple(pods),
    )


def resolve_host_paths(tree: HostTree, workloads: Workloads) -> dict[str, str]:
    """Where each Pod hostPath leads on this host. One that cannot be resolved (a symlink
    loop, an unreadable link) leads to `/`: it overlaps every cache, conservatively."""
    resolved: dict[str, str] = {}
    for path in all_host_paths(workloads):
        if not path.startswith("/"):
            continue  # judged unresolved: it overlaps anyway
        try:
            resolved[path] = tree.resolve(path)
        except TreeError:
            resolved[path] = "/"
    return resolved
