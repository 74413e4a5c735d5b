"""Step 6 of the tick: write status to Kubernetes. Best effort; the local state is the truth.

- the current operation's HostOperation status, when it differs from what was last written;
- rejections that could not be written yet;
- the Node report annotation, when this boot is what the kubelet reports and the content
  changed or a minute has passed.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from magicstick_host import schemas
from magicstick_host.domain import operation as ops
from magicstick_host.domain.actions import available_actions
from magicstick_host.domain.canonical import sha256_hex
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.inspection import rfc3339
from magicstick_host.domain.plan import clip_message
from magicstick_host.domain.report import (
    REPORT_ANNOTATION,
    build_report,
    report_content_digest_input,
)
from magicstick_host.domain.report_policy import encode_report, may_publish, should_write
from magicstick_host.domain.state import ProcessedRequest, State
from magicstick_host.errors import (
    KubeConflictError,
    KubeError,
    KubeNotFoundError,
    KubePermanentError,
    MagicstickError,
)
from magicstick_host.ports.clock import Instant

if TYPE_CHECKING:
    from magicstick_host.tick import Cluster, Tick


def publish_all(tick: Tick, state: State, ev: Evidence, now: Instant, cluster: Cluster) -> State:
    """Each part on its own: a status write that fails never holds back the Node report."""
    if tick.d.kube is None or cluster.error:
        return state
    for part in (publish_operation_status, publish_rejections):
        try:
            state = part(tick, state, ev, now)
        except KubeError as exc:
            tick.notes.append(f"status write deferred: {exc}")
    try:
        state = publish_report(tick, state, ev, now, cluster)
    except KubeError as exc:
        tick.notes.append(f"report deferred: {exc}")
    return state


def publish_operation_status(tick: Tick, state: State, ev: Evidence, now: Instant) -> State:
    op = state.operation
    kube = tick.d.kube
    if op is None or kube is None:
        return state
    status = ops.status_of(op)
    digest = ops.status_digest(status)
    if digest == op.published_status_digest:
        return state
    tick.d.crash("before-status-patch")
    refused = ""
    try:
        kube.patch_hostoperation_status(op.namespace, op.name, status, uid=op.request_uid)
    except (KubeNotFoundError, KubeConflictError):
        # the object is gone or replaced: its status can never be written; the supervise step
        # of the next tick stops an active operation for that
        tick.notes.append(f"HostOperation {op.name} is gone; status not written")
    except KubePermanentError as exc:
        # the server answered and refused this status (403, 422: e.g. an older CRD)
        refused = clip_message(f"{rfc3339(now.wall)}: {exc}")[:1024]
        tick.notes.append(f"status write refused: {exc}")
    tick.d.crash("after-status-patch")
    # a refused status counts as published: it is tried again only once it changes
    published = replace(op, published_status_digest=digest, status_refused=refused)
    return tick.save(
        replace(state, operation=published),
        "status-refused" if refused else "status-published",
        ev,
        now,
        journal=bool(refused),
    )


def publish_rejections(tick: Tick, state: State, ev: Evidence, now: Instant) -> State:
    kube = tick.d.kube
    pending = [p for p in state.processed if p.pending_status is not None]
    if kube is None or not pending:
        return state
    refusals: list[str] = []
    for entry in pending:
        assert entry.pending_status is not None
        tick.d.crash("before-status-patch")
        try:
            kube.patch_hostoperation_status(
                entry.namespace, entry.name, entry.pending_status, uid=entry.request_uid
            )
        except (KubeNotFoundError, KubeConflictError):
            pass  # deleted or replaced meanwhile: nobody is waiting on this status any more
        except KubePermanentError as exc:
            refusals.append(f"{entry.request_id}: {exc}")
            tick.notes.append(f"rejection status refused: {exc}")
        tick.d.crash("after-status-patch")
        done = ProcessedRequest(entry.request_uid, entry.request_id, entry.phase)
        state = replace(
            state,
            processed=tuple(
                done if p.request_uid == entry.request_uid else p for p in state.processed
            ),
        )
    event = "rejection-refused" if refusals else "rejection-published"
    return tick.save(state, event, ev, now)


def _parse(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None
    except ValueError:
        return None


def publish_report(
    tick: Tick, state: State, ev: Evidence, now: Instant, cluster: Cluster, *, save: bool = True
) -> State:
    kube = tick.d.kube
    node = cluster.node
    if kube is None or node is None or ev.boot_id is None or ev.kernel.release is None:
        return state
    allowed, why = may_publish(node, ev.boot_id, ev.kernel.release)
    if not allowed:
        tick.notes.append(f"report not published: {why}")
        return state
    active = state.operation is not None and not state.operation.terminal
    # this tick's inspection, with the actions as they stand after the tick's own step
    inspection = dict(tick.inspection)
    inspection["actions"] = available_actions(
        ev, inspection["plan"], inspection["gpuMemory"], operation_active=active
    )
    report = build_report(inspection, node_uid=cluster.node_uid, state=state, observed_at=now.wall)
    digest = sha256_hex(report_content_digest_input(report))
    last_at = _parse(state.last_report_at)
    if save and not should_write(
        state.last_report_digest or None,
        last_at,
        digest,
        now.wall,
        tick.d.limits.report_min_interval_s,
    ):
        return state
    problems = schemas.errors("report", report)
    if problems:  # a bug: never put a report the dashboard cannot read on the Node
        raise MagicstickError(f"the report does not match its schema: {problems[0]}")
    value = encode_report(report, tick.d.limits.report_max_chars)
    # save=False is the heartbeat of a running playbook: bounded on its own, since the playbook
    # may hold the lock past the tick's Kubernetes budget
    bound = (
        nullcontext()
        if save
        else kube.budget(tick.d.limits.kube_heartbeat_budget_s, apart=True)
    )
    with bound:
        kube.patch_node_annotation(tick.d.node_name, cluster.node_uid, REPORT_ANNOTATION, value)
    if not save:
        return state
    return tick.save(
        replace(state, last_report_digest=digest, last_report_at=rfc3339(now.wall)),
        "report-published",
        ev,
        now,
        journal=False,
    )
