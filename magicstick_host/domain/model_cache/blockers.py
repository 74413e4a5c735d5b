"""What in Kubernetes blocks clearing the model caches (model-cache.md, "Blockers"). Pure.

Conservative throughout: a field of an unexpected type counts as the blocking reading, a
missing CRD means "no such objects", and a list that could not be read means "cannot tell",
which blocks too (and withdraws the capability: the workload inventory is unknown).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from magicstick_host.domain.model_cache.inventory import (
    CACHE_ROOTS,
    CacheRootSpec,
    below,
    normalise_path,
)
from magicstick_host.lite_dataclasses import dataclass

if TYPE_CHECKING:
    from typing import Any

    Json = dict[str, Any]
MODEL_POD_LABELS = (("app", "model"), ("app.kubernetes.io/name", "freetoken"))
# at most this many blockers are named in a message; the rest are counted
NAMED_BLOCKERS = 3


@dataclass(frozen=True)
class Workloads:
    """The model-serving objects as read from the cluster.

    `activations` / `models` are None when their CRD is not installed; `error` says why the
    reads failed ("" when they did not), in which case nothing else here can be relied on."""

    activations: tuple[Json, ...] | None = None
    models: tuple[Json, ...] | None = None
    pods: tuple[Json, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class Blockers:
    found: tuple[str, ...] = ()  # one line each, e.g. "ModelActivation ai-system/qwen"
    error: str = ""  # the workloads could not be read: cannot tell

    @property
    def blocked(self) -> bool:
        return bool(self.found or self.error)

    def summary(self) -> str:
        if self.error:
            return f"the model deployments cannot be read from Kubernetes ({self.error})"
        named = ", ".join(self.found[:NAMED_BLOCKERS])
        more = len(self.found) - NAMED_BLOCKERS
        return named + (f" and {more} more" if more > 0 else "")


def _dict(value: Any) -> Json:
    return value if isinstance(value, dict) else {}


def _name(obj: Json) -> str:
    meta = _dict(obj.get("metadata"))
    namespace, name = meta.get("namespace"), meta.get("name")
    return f"{namespace}/{name}" if namespace else str(name)


def activation_blocks(activation: Json, node_name: str) -> bool:
    """An enabled local ModelActivation that is unpinned or pinned to this node."""
    spec = _dict(activation.get("spec"))
    if spec.get("enabled", True) is False:
        return False
    kind = spec.get("type", "local")
    if isinstance(kind, str) and kind != "local":
        return False
    device = _dict(_dict(spec.get("local")).get("freetoken")).get("gpuDevice")
    if isinstance(device, str) and device.startswith("node:"):
        pinned = device.removeprefix("node:")
        return not pinned or pinned == node_name  # "node:" alone pins nowhere we can tell
    return True


def _labels(pod: Json) -> Json:
    return _dict(_dict(pod.get("metadata")).get("labels"))


def model_pod_blocks(pod: Json, node_name: str) -> bool:
    """A model Pod on this node or not yet scheduled (terminating ones included)."""
    labels = _labels(pod)
    if not any(labels.get(key) == value for key, value in MODEL_POD_LABELS):
        return False
    node = _dict(pod.get("spec")).get("nodeName")
    return not node or node == node_name or not isinstance(node, str)


def overlaps(host_path: Any, root: str) -> bool:
    """A hostPath that is a cache root, inside one, or above one (`/`, `/root`), after
    normalisation. A path that is not an absolute string cannot be judged: it overlaps."""
    if not isinstance(host_path, str) or not host_path.startswith("/"):
        return True
    path = normalise_path(host_path)
    return path == root or below(path, root) or below(root, path)


def host_paths(pod: Json) -> list[Any]:
    paths = []
    for volume in _dict(pod.get("spec")).get("volumes") or []:
        if isinstance(volume, dict) and "hostPath" in volume:
            paths.append(_dict(volume.get("hostPath")).get("path"))
    return paths


def host_path_overlap(
    pod: Json,
    resolved: Mapping[str, str] | None = None,
    specs: Sequence[CacheRootSpec] = CACHE_ROOTS,
) -> str:
    """The first hostPath of the Pod that overlaps a cache root, "" when none does. A path in
    `resolved` is also judged by where its symlinks on this host lead (the kubelet follows
    them when it mounts)."""
    for path in host_paths(pod):
        leads = (resolved or {}).get(path) if isinstance(path, str) else None
        for spec in specs:
            if overlaps(path, spec.path) or (leads is not None and overlaps(leads, spec.path)):
                return path if isinstance(path, str) else repr(path)
    return ""


def all_host_paths(workloads: Workloads) -> list[str]:
    """Every distinct hostPath string of every Pod, for resolving on the host."""
    found = {p for pod in workloads.pods for p in host_paths(pod) if isinstance(p, str)}
    return sorted(found)


def find_blockers(
    workloads: Workloads, node_name: str, resolved: Mapping[str, str] | None = None
) -> Blockers:
    """`resolved`: hostPath -> where it leads on this host (collect/model_workloads.py)."""
    if workloads.error:
        return Blockers(error=workloads.error)
    found: list[str] = []
    for activation in workloads.activations or ():
        if activation_blocks(activation, node_name):
            found.append(f"ModelActivation {_name(activation)}")
    found.extend(f"KubeAI Model {_name(model)}" for model in workloads.models or ())
    for pod in workloads.pods:
        if model_pod_blocks(pod, node_name):
            found.append(f"model Pod {_name(pod)}")
            continue
        overlap = host_path_overlap(pod, resolved)
        if overlap:
            found.append(f"Pod {_name(pod)} (hostPath {overlap})")
    return Blockers(found=tuple(found))
