"""Supervision: does the active operation's request still stand, as the cluster shows it? Pure.

Step 1 of the tick's decisions, for an operation that is running (operations.md, "Intake" and
"Recovery and audit"). Each way the request can stop standing ends the operation Interrupted
with what is known; nothing is repeated and nothing is guessed:
- the Node the request was approved for is gone: the worker's Node name answers 404 (the Node
  was renamed or deleted), or the Node under that name has another UID (deleted and created
  again: the HostOperation name derives from the Node UID, so its request is another object);
- the HostOperation was deleted (or replaced by another object of the same name): "execution
  state removed", which also stops the worker until `recover` (contract.md);
- the request's spec changed (the CRD forbids it; if it happens anyway).

Why only a removed HostOperation blocks the worker: there someone deleted the record of a
running operation, so the dashboard lost what the host was doing, and the contract wants a
person at the console before anything else runs. A Node that was renamed or re-created loses
nothing of the operation's record: the local state and the journal are complete, the
HostOperation still exists and gets the Interrupted status, and every new request is checked
against the Node as it is now (name, UID, boot). So the worker stops the operation, says why,
and goes on with the Node it has.
"""

from __future__ import annotations

from magicstick_host.domain.cluster import ClusterView, hostoperation_name
from magicstick_host.domain.request import request_digest
from magicstick_host.domain.state import Operation
from magicstick_host.lite_dataclasses import dataclass


@dataclass(frozen=True)
class Stop:
    """The active operation stops (Interrupted); `event` is the journal's name for why."""

    event: str
    message: str
    blocks: bool = False  # the worker takes no new request until `recover`


def _pending(shutdown_scheduled: bool) -> str:
    return (
        " A shutdown is still scheduled on this host; the worker left it as it is."
        if shutdown_scheduled
        else ""
    )


def supervise(
    op: Operation, cluster: ClusterView, *, node_name: str, shutdown_scheduled: bool
) -> Stop | None:
    """Why the active operation `op` must stop now, or None while its request stands.
    `cluster` was read without error this tick."""
    pending = _pending(shutdown_scheduled)
    if cluster.node_missing:
        return Stop(
            "node-missing",
            f"The Node {node_name} is no longer in the cluster (it was renamed or deleted) "
            "while this operation ran, so its request cannot be followed any more. The worker "
            f"stopped the operation; nothing was repeated.{pending} If the host joined under "
            "another name, run the worker with that Node name and create a new request.",
        )
    if op.name and hostoperation_name(cluster.node_uid) != op.name:
        return Stop(
            "node-recreated",
            f"The Node {node_name} was deleted and created again while this operation ran (it "
            f"now has the UID {cluster.node_uid}), so this request, approved for the Node as "
            "it was, no longer applies. The worker stopped the operation; nothing was "
            f"repeated.{pending} Review the host, then create a new request.",
        )
    request = cluster.request
    uid = str(((request or {}).get("metadata") or {}).get("uid", ""))
    if request is None or uid != op.request_uid:
        return Stop(
            "execution-state-removed",
            "The execution state was removed: the HostOperation of this active operation was "
            "deleted. The worker stopped it; run `magicstick-host recover` at the console.",
            blocks=True,
        )
    if request_digest(uid, request.get("spec") or {}) != op.request_digest:
        return Stop(
            "request-changed",
            "The request changed after it was accepted; the operation was stopped.",
        )
    return None
