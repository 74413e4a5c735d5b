"""Step 3 of the tick, the Kubernetes half: the Node, its HostOperation, and the objects the
operations in play declare (`OperationKind.reads`), within the reads' share of the budget.

The HostOperation read is the active operation's own (by the name it was accepted under),
else the one named after the Node's UID. So a Node that was deleted and created again (a new
UID, so a new HostOperation name) shows as that, not as a deleted request; and a Node that is
not there at all (renamed or deleted) still lets the active operation's status be written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.cluster import (
    SYSTEM_NAMESPACE,
    ClusterRead,
    ClusterView,
    hostoperation_name,
)
from magicstick_host.domain.limits import Limits
from magicstick_host.domain.operations.registry import kind_of
from magicstick_host.domain.state import Operation
from magicstick_host.errors import KubeError, KubeNotFoundError
from magicstick_host.ports.kube import KubePort

if TYPE_CHECKING:
    from magicstick_host.domain.cluster import Json


def wanted_reads(request: Json | None, active: Operation | None) -> list[ClusterRead]:
    """What intake of `request` and the next step of `active` read, each object once."""
    wanted: dict[str, ClusterRead] = {}
    action = ((request or {}).get("spec") or {}).get("action")
    kind = kind_of(action) if isinstance(action, str) else None
    for read in kind.reads if kind is not None else ():
        if read.wanted(None):
            wanted.setdefault(read.key, read)
    if active is not None and not active.terminal:
        own = kind_of(active.action)
        for read in own.reads if own is not None else ():
            if read.wanted(active.phase):
                wanted.setdefault(read.key, read)
    return list(wanted.values())


def read_cluster(
    kube: KubePort, node_name: str, active: Operation | None, limits: Limits
) -> tuple[ClusterView, KubeError | None]:
    """The view, and the error met: an empty view when Kubernetes could not be asked; a view
    without a Node (`node_missing`) when it has no Node of this name."""
    running = active if active is not None and not active.terminal and active.name else None
    try:
        # a share of the tick's budget: the local step runs soon, whatever the API does
        with kube.budget(limits.kube_read_budget_s):
            try:
                node = kube.read_node(node_name)
            except KubeNotFoundError as exc:
                request = (
                    kube.get_hostoperation(running.namespace, running.name) if running else None
                )
                return ClusterView(node_missing=True, request=request), exc
            uid = str((node.get("metadata") or {}).get("uid", ""))
            request = (
                kube.get_hostoperation(running.namespace, running.name)
                if running is not None
                else kube.get_hostoperation(SYSTEM_NAMESPACE, hostoperation_name(uid))
            )
            objects: dict[str, Json | None] = {}
            served: dict[str, bool] = {}
            for read in wanted_reads(request, active):
                if read.check_served:
                    served[read.key] = kube.serves(read.api_version, read.plural)
                    if not served[read.key]:
                        objects[read.key] = None
                        continue
                objects[read.key] = kube.get_object(
                    read.api_version, read.plural, read.namespace, read.name
                )
    except KubeError as exc:
        return ClusterView(error=str(exc)), exc
    return ClusterView(node=node, request=request, objects=objects, served=served), None
