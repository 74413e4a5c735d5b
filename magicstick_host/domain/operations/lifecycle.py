"""The life of an Operation, as pure transitions: accept, begin and finish a step, change phase,
and the HostOperation status it publishes. The same for every operation."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from magicstick_host.domain.canonical import sha256_hex
from magicstick_host.domain.decisions import ClassifiedStep, RunStep, SetPhase
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.request import Accepted
from magicstick_host.domain.state import Operation, Step
from magicstick_host.domain.text import clip_message
from magicstick_host.domain.times import rfc3339
from magicstick_host.lite_dataclasses import replace

if TYPE_CHECKING:
    from typing import Any


def start_operation(
    req: Accepted,
    *,
    namespace: str,
    name: str,
    boot_id: str,
    wall: datetime,
    boottime: float,
    reboot_budget: int,
    data: Any,
) -> Operation:
    now = rfc3339(wall)
    return Operation(
        request_uid=req.uid,
        request_id=req.request_id,
        action=req.action,
        namespace=namespace,
        name=name,
        request_digest=req.digest,
        plan_id=req.plan_id,
        accepted_boot_id=boot_id,
        accepted_at=now,
        phase=Phase.ACCEPTED,
        message="The request was accepted and is being checked.",
        updated_at=now,
        phase_boot_id=boot_id,
        phase_since_boottime=boottime,
        reboot_budget=reboot_budget,
        data=data,
        request_expires_at=rfc3339(req.expires_at) if req.expires_at else "",
    )


def set_phase(
    op: Operation, change: SetPhase, *, boot_id: str, wall: datetime, boottime: float
) -> Operation:
    clock = (
        {"phase_boot_id": boot_id, "phase_since_boottime": boottime}
        if change.restart_clock and change.phase != op.phase
        else {}
    )
    return replace(
        op,
        phase=change.phase,
        message=change.message,  # Operation clips it (domain/text.py)
        updated_at=rfc3339(wall),
        outcome=change.outcome or op.outcome,
        data=op.data if change.data is None else change.data,
        **clock,
    )


def too_late(op: Operation, wall: datetime) -> SetPhase | None:
    """An accepted operation that could not take its first step within the request's lifetime
    (e.g. the state disk was full) never starts late: the administrator has moved on."""
    if op.phase != Phase.ACCEPTED or op.steps or not op.request_expires_at:
        return None
    if rfc3339(wall) <= op.request_expires_at:
        return None
    return SetPhase(
        Phase.INTERRUPTED,
        "The request's lifetime ended before its first step could run; too late, nothing was "
        "executed. Create a new request if it is still wanted.",
    )


def restarted_before_start(op: Operation, boot_id: str) -> SetPhase | None:
    """An accepted operation whose host restarted before its first step (a power loss, someone
    else's restart) never starts in the new boot: its request was made for, and checked in,
    the boot it was accepted in, and the administrator saw the host go down. Found in the
    appliance VM: a restart request accepted just before a power cut scheduled a second
    restart once the host was back, within the request's lifetime."""
    if op.phase != Phase.ACCEPTED or op.steps or op.accepted_boot_id == boot_id:
        return None
    return SetPhase(
        Phase.INTERRUPTED,
        "The host restarted before the first step could run (a power loss or another "
        "restart); nothing was executed. Create a new request if it is still wanted.",
    )


def touch_message(op: Operation, message: str, *, wall: datetime) -> Operation:
    """The same message (as the operation keeps it: clipped) changes nothing, not even the
    time: a waiting operation's status is not written again each tick."""
    if clip_message(message) == op.message:
        return op
    return replace(op, message=message, updated_at=rfc3339(wall))


def over_budget(op: Operation, run: RunStep) -> SetPhase | None:
    """A restart beyond the operation's budget is never scheduled: no reboot loops."""
    if run.uses_reboot and op.reboots_used >= op.reboot_budget:
        return SetPhase(
            Phase.FAILED,
            f"The restart budget ({op.reboot_budget}) is used up; nothing more is restarted.",
        )
    return None


def begin_step(
    op: Operation, run: RunStep, *, boot_id: str, wall: datetime, boottime: float
) -> Operation:
    """The intent: written (and fsynced) before the effect runs."""
    step = Step(
        name=run.step,
        inputs=dict(run.inputs),
        boot_id=boot_id,
        started_at=rfc3339(wall),
        started_boottime=boottime,
    )
    return replace(
        op,
        steps=(*op.steps, step),
        reboots_used=op.reboots_used + (1 if run.uses_reboot else 0),
        updated_at=rfc3339(wall),
    )


def finish_step(
    op: Operation,
    run: RunStep,
    *,
    ok: bool,
    detail: str,
    boot_id: str,
    wall: datetime,
    boottime: float,
) -> Operation:
    """The outcome of the open step, and the phase it leads to."""
    closed = _close_open_step(op, "done" if ok else "failed", detail, wall)
    if ok:
        change = SetPhase(run.phase_on_done, run.message_on_done, data=run.data_on_done)
    else:
        # after a full stop (or alone) the effect's detail ("the task '...' failed: ...")
        # starts a sentence
        lead = run.message_on_failure.rstrip()
        if not lead or lead.endswith("."):
            detail = detail[:1].upper() + detail[1:]
        change = SetPhase(
            run.phase_on_failure,
            f"{run.message_on_failure} {detail}".strip(),
            data=run.data_on_failure,
        )
    return set_phase(closed, change, boot_id=boot_id, wall=wall, boottime=boottime)


def apply_classification(
    op: Operation, cls: ClassifiedStep, *, boot_id: str, wall: datetime, boottime: float
) -> Operation:
    closed = _close_open_step(op, cls.outcome, cls.detail, wall)
    return set_phase(closed, cls.then, boot_id=boot_id, wall=wall, boottime=boottime)


def _close_open_step(op: Operation, outcome: str, detail: str, wall: datetime) -> Operation:
    step = op.open_step
    if step is None:
        raise ValueError("no open step to close")
    done = replace(step, outcome=outcome, finished_at=rfc3339(wall), detail=detail)
    return replace(op, steps=(*op.steps[:-1], done))


def status_of(op: Operation) -> dict[str, Any]:
    """The HostOperation status this operation publishes (contract.md, plus optional extras)."""
    status: dict[str, Any] = {
        "phase": str(op.phase),
        "message": op.message,
        "requestId": op.request_id,
        "startedAt": op.accepted_at,
        "updatedAt": op.updated_at,
        "bootId": op.phase_boot_id,
        "rebootsUsed": op.reboots_used,
        "rebootBudget": op.reboot_budget,
    }
    if op.outcome:
        status["outcome"] = op.outcome
    # an operation's own status fields (e.g. configure-network's confirmationDeadline)
    extra = getattr(op.data, "status_fields", None)
    if callable(extra):
        status.update(extra(op.phase))
    return status


def status_digest(status: dict[str, Any]) -> str:
    return sha256_hex(status)
