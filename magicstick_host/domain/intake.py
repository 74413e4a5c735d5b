"""Intake: is a new HostOperation safe to start on this host, right now? (operations.md)

A pure function of the request object, the local state and the host's current facts. Every
rejection carries its own clear message; the dashboard shows it to the administrator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from magicstick_host.domain.canonical import sha256_hex
from magicstick_host.domain.gpu_memory import GpuMemoryCapability, validate_memory_selection
from magicstick_host.domain.limits import Limits
from magicstick_host.domain.state import TERMINAL_PHASES, State

POWER_ACTIONS = ("reboot", "poweroff")
GPU_ACTIONS = ("prepare-gpu", "configure-gpu-memory")
LATER_ACTIONS = ("clear-model-cache", "configure-network", "scan-wifi")
FOREIGN_ACTIONS = (
    "configure-updates",
    "check-updates",
    "install-updates",
    "check-software-channel",
    "apply-software-channel",
)
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
EXTRA_FIELDS = {
    "configure-gpu-memory": frozenset({"gpuMemory"}),
    "configure-network": frozenset({"networkRef"}),
    "scan-wifi": frozenset({"networkRef"}),
    "install-updates": frozenset({"updateScope"}),
    "configure-updates": frozenset({"updatePolicy"}),
    "check-software-channel": frozenset({"softwareChannel"}),
    "apply-software-channel": frozenset({"softwareChannel", "softwarePreviewId"}),
}
REQUEST_ID = re.compile(r"^[0-9a-f]{32}$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class HostFacts:
    """What intake checks a request against, all observed on this tick."""

    node_name: str
    node_uid: str
    boot_id: str | None
    now: datetime  # wall, UTC
    plan: dict[str, Any]
    gpu_memory: dict[str, Any]
    shutdown_scheduled: bool
    # the capability itself, to check a configure-gpu-memory selection against
    memory_capability: GpuMemoryCapability | None = None


@dataclass(frozen=True)
class Accepted:
    uid: str
    request_id: str
    action: str
    spec: dict[str, Any]
    digest: str
    plan_id: str
    experiment: bool
    # the end of the request's lifetime: an operation that has not started by then never does
    expires_at: datetime | None = None


@dataclass(frozen=True)
class Rejected:
    uid: str
    request_id: str
    action: str
    message: str


@dataclass(frozen=True)
class Ignored:
    """Not a request to act on: already processed, or finished before our records began."""

    uid: str
    why: str


Review = Accepted | Rejected | Ignored


def request_digest(uid: str, spec: dict[str, Any]) -> str:
    return sha256_hex({"uid": uid, "spec": spec})


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


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
    problem = _spec_problem(spec, action, request_id, state, host, limits, meta)
    if problem is not None:
        return reject(problem)
    created = _parse_time(meta.get("creationTimestamp"))
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
    if action in FOREIGN_ACTIONS:
        return f"The action {action} is not handled by this host worker."
    if action in LATER_ACTIONS:
        return f"The action {action} is not available on this host yet; no action was executed."
    if action not in POWER_ACTIONS + GPU_ACTIONS:
        return f"Unknown action {action!r}; no action was executed."
    allowed = COMMON_FIELDS | EXTRA_FIELDS.get(action, frozenset())
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
    created = _parse_time(meta.get("creationTimestamp"))
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
    return _action_problem(spec, action, host, limits)


def _action_problem(
    spec: dict[str, Any], action: str, host: HostFacts, limits: Limits
) -> str | None:
    plan_id = spec.get("planId", "")
    if action in POWER_ACTIONS:
        if plan_id:
            return f"A {action} request carries no plan id."
        if spec["allowExperimental"] or spec["experimentMode"]:
            return f"A {action} request must not set the experimental flags."
        return None
    if not isinstance(plan_id, str) or not HEX64.match(plan_id):
        return f"A {action} request needs the 64-hex plan id it was approved against."
    if action == "prepare-gpu":
        return _prepare_problem(spec, plan_id, host.plan)
    return _memory_problem(spec, plan_id, host, limits)


OFFERED_PLAN_STATES = ("available", "ready")


def _prepare_problem(spec: dict[str, Any], plan_id: str, plan: dict[str, Any]) -> str | None:
    """The dashboard offers a plan or its experiment only in an offered state, sends the id it
    showed, and takes `allowExperimental` from the plan's (or experiment's) `experimental`."""
    if spec["experimentMode"]:
        experiment = plan.get("experiment")
        if not isinstance(experiment, dict):
            return "This host offers no experiment; experiment mode cannot be used."
        if plan_id != experiment.get("id"):
            return (
                "The host changed since the experiment was reviewed (the experiment's plan id "
                "differs); review again."
            )
        if experiment.get("state") not in OFFERED_PLAN_STATES:
            return f"The experiment is {experiment.get('state')}: {experiment.get('message')}"
        # an experiment is always experimental, whatever its document says
        if not spec["allowExperimental"]:
            return "This is an experiment and the request does not allow experimental plans."
        return None
    if plan_id != plan.get("id"):
        return "The host changed since the plan was reviewed (the plan id differs); review again."
    if plan.get("state") not in OFFERED_PLAN_STATES:
        return f"The plan is {plan.get('state')}: {plan.get('message')}"
    if plan.get("experimental") and not spec["allowExperimental"]:
        return "This plan is experimental and the request does not allow experimental plans."
    return None


def _memory_problem(
    spec: dict[str, Any], plan_id: str, host: HostFacts, limits: Limits
) -> str | None:
    cap = host.gpu_memory
    if not spec["allowExperimental"] or spec["experimentMode"]:
        return "configure-gpu-memory requires allowExperimental and no experiment mode."
    if plan_id != cap.get("id"):
        return "The GPU memory settings changed since they were reviewed (the id differs)."
    if not cap.get("supported"):
        return f"GPU memory control is not available: {cap.get('message')}"
    selection = spec.get("gpuMemory")
    if not isinstance(selection, dict) or set(selection) != {"carveoutIndex", "dynamicLimitMi"}:
        return "configure-gpu-memory needs exactly gpuMemory {carveoutIndex, dynamicLimitMi}."
    index, limit = selection["carveoutIndex"], selection["dynamicLimitMi"]
    # bool is an int in Python; the contract wants real integers
    if type(index) is not int or type(limit) is not int:
        return "gpuMemory carveoutIndex and dynamicLimitMi must be integers."
    if host.memory_capability is None:
        return "GPU memory control is not available: the capability could not be computed."
    result = validate_memory_selection(host.memory_capability, index, limit, limits)
    return None if result.ok else result.message


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
