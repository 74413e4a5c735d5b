"""Intake: is a new HostOperation safe to start on this host, right now? (operations.md)

A pure function of the request object, the local state and the host's current facts. Every
rejection carries its own clear message; the dashboard shows it to the administrator. The rules
every request shares are here; each operation's own (its fields, its plan or capability id)
are in its module (`OperationKind.request_fields`, `check_request`), found in the registry.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from magicstick_host.domain.limits import Limits
from magicstick_host.domain.offers import HOST_BUSY
from magicstick_host.domain.operations.registry import (
    FOREIGN_ACTIONS,
    NOT_YET_ACTIONS,
    kind_of,
)
from magicstick_host.domain.phase import TERMINAL_PHASES
from magicstick_host.domain.request import (
    HEX64,
    REQUEST_ID,
    Accepted,
    HostFacts,
    Ignored,
    Rejected,
    Review,
    request_digest,
)
from magicstick_host.domain.state import State
from magicstick_host.domain.times import parse_time

if TYPE_CHECKING:
    from typing import Any

# every request has these (contract.md, "Spec fields"); an operation adds its own
COMMON_FIELDS = frozenset(
    {
        "action",
        "nodeName",
        "nodeUid",
        "bootId",
        "requestId",
        "acknowledgeDisruption",
        "allowExperimental",
        "experimentMode",
        "actorHash",
        "planId",
    }
)


def review_request(obj: dict[str, Any], state: State, host: HostFacts, limits: Limits) -> Review:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    uid = str(meta.get("uid") or "")
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    request_id = spec.get("requestId") if isinstance(spec.get("requestId"), str) else ""
    action = spec.get("action") if isinstance(spec.get("action"), str) else ""
    assert isinstance(request_id, str) and isinstance(action, str)

    if not uid:
        return Ignored(uid, "the object has no UID")
    if state.seen_uid(uid) is not None:
        return Ignored(uid, "already processed")
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    assert isinstance(status, dict)
    if status.get("phase") in TERMINAL_PHASES:
        return Ignored(uid, f"finished ({status.get('phase')}) before this host's records")

    def reject(message: str) -> Rejected:
        return Rejected(uid, request_id, action, message)

    if meta.get("deletionTimestamp"):
        return reject("The request is being deleted; no action was executed.")
    if status.get("phase"):
        pending = (
            " A shutdown is still scheduled on this host; the worker left it as it is."
            if host.shutdown_scheduled
            else ""
        )
        return reject(
            f"The execution state was lost: this request already has a status "
            f"({status.get('phase')}) but this host has no record of it, so what it ran cannot "
            f"be told from here.{pending} Check the host and `magicstick-host history` before "
            "creating a new request."
        )
    if state.block is not None:
        return reject(f"The host worker is stopped: {state.block.message}")
    if state.operation is not None and not state.operation.terminal:
        active = state.operation
        return reject(
            f"Another operation is active on this host: {active.action} "
            f"(request {active.request_id}, phase {active.phase}). Try again when it has finished."
        )
    if host.shutdown_scheduled:
        return reject(
            "A shutdown is already scheduled on this host; no new operation starts until it has "
            "happened or been cancelled."
        )
    busy = host.capabilities.get(HOST_BUSY)
    if busy:
        return reject(str(busy))
    problem = _spec_problem(spec, action, request_id, state, host, limits, meta)
    if problem is not None:
        return reject(problem)
    created = parse_time(meta.get("creationTimestamp"))
    expires = created + timedelta(seconds=limits.request_max_age_s) if created else None
    return _accept(uid, request_id, action, spec, expires)


def _spec_problem(
    spec: dict[str, Any],
    action: str,
    request_id: str,
    state: State,
    host: HostFacts,
    limits: Limits,
    meta: dict[str, Any],
) -> str | None:
    kind = kind_of(action)
    if kind is None:
        if action in FOREIGN_ACTIONS:
            return f"The action {action} is not handled by this host worker."
        if action in NOT_YET_ACTIONS:
            return (
                f"The action {action} is not available on this host yet; no action was "
                "executed."
            )
        return f"Unknown action {action!r}; no action was executed."
    allowed = COMMON_FIELDS | kind.request_fields
    extra = sorted(set(spec) - allowed)
    if extra:
        return f"The request has fields that do not belong to {action}: {', '.join(extra)}."
    if not REQUEST_ID.match(request_id):
        return "The requestId must be exactly 32 lowercase hexadecimal characters."
    if state.seen_request_id(request_id):
        return f"The request {request_id} was already processed; a replay is never executed."
    if spec.get("nodeName") != host.node_name:
        return f"The request is for node {spec.get('nodeName')!r}, not {host.node_name!r}."
    if spec.get("nodeUid") != host.node_uid:
        return "The request names a different node UID than this node's."
    if host.boot_id is None:
        return "This host's boot ID cannot be read, so the request cannot be checked."
    if spec.get("bootId") != host.boot_id:
        return (
            "The request was approved for a different boot of this host (it has restarted "
            "since); no action was executed. Review the host again and create a new request."
        )
    created = parse_time(meta.get("creationTimestamp"))
    if created is None:
        return "The request has no readable creation time; no action was executed."
    age = host.now - created
    if age > timedelta(seconds=limits.request_max_age_s) or age < -timedelta(
        seconds=limits.request_max_future_s
    ):
        return (
            f"The request expired (created {int(age.total_seconds())} s ago; the limit is "
            f"{int(limits.request_max_age_s)} s); no action was executed."
        )
    for flag in ("acknowledgeDisruption", "allowExperimental", "experimentMode"):
        if not isinstance(spec.get(flag), bool):
            return f"The field {flag} must be a real boolean."
    if spec["acknowledgeDisruption"] is not True:
        return "The disruption was not acknowledged; no action was executed."
    if not isinstance(spec.get("actorHash"), str) or not HEX64.match(spec["actorHash"]):
        return "The actorHash must be 64 lowercase hexadecimal characters."
    if spec["experimentMode"] and not spec["allowExperimental"]:
        return "Experiment mode requires allowExperimental."
    return kind.check_request(spec, host, limits)


def _accept(
    uid: str, request_id: str, action: str, spec: dict[str, Any], expires: datetime | None
) -> Review:
    return Accepted(
        uid=uid,
        request_id=request_id,
        action=action,
        spec=spec,
        digest=request_digest(uid, spec),
        plan_id=str(spec.get("planId", "")),
        experiment=bool(spec.get("experimentMode")),
        expires_at=expires,
    )
