"""Step 6 of the tick: write status to Kubernetes. Best effort; the local state is the truth.

- the current operation's HostOperation status, when it differs from what was last written;
- rejections that could not be written yet;
- the Node report annotation, when this boot is what the kubelet reports and the content
  changed or a minute has passed.

Everything comes in as arguments (`Publishing`, built by the tick) and each function returns
the new state; saving goes through the `save` it is given, so the tick's crash points and
journal rules apply unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import nullcontext
from typing import TYPE_CHECKING

from magicstick_host import schemas
from magicstick_host.domain.canonical import sha256_hex
from magicstick_host.domain.cluster import ClusterView
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.limits import Limits
from magicstick_host.domain.offers import available_actions
from magicstick_host.domain.operations import registry
from magicstick_host.domain.operations.lifecycle import status_digest, status_of
from magicstick_host.domain.report import (
    REPORT_ANNOTATION,
    build_report,
    report_content_digest_input,
)
from magicstick_host.domain.report_policy import encode_report, may_publish, should_write
from magicstick_host.domain.state import ProcessedRequest, State
from magicstick_host.domain.times import parse_time, rfc3339
from magicstick_host.errors import (
    KubeConflictError,
    KubeError,
    KubeNotFoundError,
    KubePermanentError,
    MagicstickError,
)
from magicstick_host.lite_dataclasses import dataclass, field, replace
from magicstick_host.ports.clock import Instant
from magicstick_host.ports.kube import KubePort

if TYPE_CHECKING:
    from typing import Any

# (state, event, journal?) -> the saved state (the tick's save: crash points, journal rules)
Save = Callable[[State, str, bool], State]
CrashHook = Callable[[str], None]


@dataclass
class Publishing:
    """What one tick publishes from, and how it saves what it published."""

    kube: KubePort
    node_name: str
    limits: Limits
    cluster: ClusterView
    ev: Evidence
    now: Instant
    # this tick's inspection (evidence, plan, gpuMemory), and its capabilities by section
    inspection: dict[str, Any]
    capabilities: Mapping[str, Any]
    save: Save
    crash: CrashHook
    # what happened that the tick's summary should say (deferred writes, refusals)
    notes: list[str] = field(default_factory=list)
    # the Kubernetes errors met (the API failed the tick), and the statuses the server refused
    # (each once: recorded, not retried): both count for the exit code
    errors: list[KubeError] = field(default_factory=list)
    refusals: list[KubeError] = field(default_factory=list)
    # why the report is not published yet (the kubelet has not reported this boot), or ""
    report_waits: str = ""


def publish_all(state: State, p: Publishing) -> State:
    """Each part on its own: a status write that fails never holds back the Node report."""
    if p.cluster.error:
        return state
    for part in (publish_operation_status, publish_rejections):
        try:
            state = part(state, p)
        except KubeError as exc:
            p.notes.append(f"status write deferred: {exc}")
            p.errors.append(exc)
    try:
        state = publish_report(state, p)
    except KubeError as exc:
        p.notes.append(f"report deferred: {exc}")
        p.errors.append(exc)
    return state


def publish_operation_status(state: State, p: Publishing) -> State:
    op = state.operation
    if op is None:
        return state
    status = status_of(op)
    digest = status_digest(status)
    if digest == op.published_status_digest:
        return state
    p.crash("before-status-patch")
    refused = ""
    try:
        p.kube.patch_hostoperation_status(op.namespace, op.name, status, uid=op.request_uid)
    except (KubeNotFoundError, KubeConflictError):
        # the object is gone or replaced: its status can never be written; the supervise step
        # of the next tick stops an active operation for that
        p.notes.append(f"HostOperation {op.name} is gone; status not written")
    except KubePermanentError as exc:
        # the server answered and refused this status (403, 422: e.g. an older CRD)
        refused = f"{rfc3339(p.now.wall)}: {exc}"  # Operation clips it (domain/text.py)
        p.notes.append(f"status write refused: {exc}")
        p.refusals.append(exc)
    p.crash("after-status-patch")
    # a refused status counts as published: it is tried again only once it changes
    published = replace(op, published_status_digest=digest, status_refused=refused)
    return p.save(
        replace(state, operation=published),
        "status-refused" if refused else "status-published",
        bool(refused),
    )


def publish_rejections(state: State, p: Publishing) -> State:
    pending = [e for e in state.processed if e.pending_status is not None]
    if not pending:
        return state
    refusals: list[str] = []
    for entry in pending:
        assert entry.pending_status is not None
        p.crash("before-status-patch")
        try:
            p.kube.patch_hostoperation_status(
                entry.namespace, entry.name, entry.pending_status, uid=entry.request_uid
            )
        except (KubeNotFoundError, KubeConflictError):
            pass  # deleted or replaced meanwhile: nobody is waiting on this status any more
        except KubePermanentError as exc:
            refusals.append(f"{entry.request_id}: {exc}")
            p.notes.append(f"rejection status refused: {exc}")
            p.refusals.append(exc)
        p.crash("after-status-patch")
        done = ProcessedRequest(entry.request_uid, entry.request_id, entry.phase)
        state = replace(
            state,
            processed=tuple(
                done if e.request_uid == entry.request_uid else e for e in state.processed
            ),
        )
    event = "rejection-refused" if refusals else "rejection-published"
    return p.save(state, event, True)


def publish_report(state: State, p: Publishing, *, save: bool = True) -> State:
    """The Node report. `save=False` is the heartbeat of a running playbook: nothing is saved,
    and it is bounded on its own, since the playbook may hold the lock past the tick's
    Kubernetes budget."""
    node, ev = p.cluster.node, p.ev
    if node is None or ev.boot_id is None or ev.kernel.release is None:
        return state
    allowed, why = may_publish(node, ev.boot_id, ev.kernel.release)
    if not allowed:
        p.notes.append(f"report not published: {why}")
        p.report_waits = why
        return state
    active = state.operation is not None and not state.operation.terminal
    # this tick's inspection, with the actions as they stand after the tick's own step
    inspection = dict(p.inspection)
    # the registry's actions (a test may register one: tests/tick/test_toy_operation.py)
    inspection["actions"] = available_actions(ev, p.capabilities, operation_active=active,
                                              offers=registry.offers())
    inspection.setdefault("modelCache", p.capabilities.get("modelCache"))
    report = build_report(
        inspection, node_uid=p.cluster.node_uid, state=state, observed_at=p.now.wall
    )
    digest = sha256_hex(report_content_digest_input(report))
    if save and not should_write(
        state.last_report_digest or None,
        parse_time(state.last_report_at),
        digest,
        p.now.wall,
        p.limits.report_min_interval_s,
    ):
        return state
    problems = schemas.errors("report", report)
    if problems:  # a bug: never put a report the dashboard cannot read on the Node
        raise MagicstickError(f"the report does not match its schema: {problems[0]}")
    value = encode_report(report, p.limits.report_max_chars)
    bound = (
        nullcontext() if save else p.kube.budget(p.limits.kube_heartbeat_budget_s, apart=True)
    )
    with bound:
        p.kube.patch_node_annotation(p.node_name, p.cluster.node_uid, REPORT_ANNOTATION, value)
    if not save:
        return state
    return p.save(
        replace(state, last_report_digest=digest, last_report_at=rfc3339(p.now.wall)),
        "report-published",
        False,
    )
