"""reboot / poweroff, stage by stage (operations.md). Pure decisions."""

from __future__ import annotations

from magicstick_host.domain.decisions import (
    ClassifiedStep,
    Decision,
    RunStep,
    SetPhase,
    Situation,
    Wait,
)
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.limits import Limits
from magicstick_host.domain.state import Operation

SCHEDULE_SHUTDOWN = "schedule-shutdown"
# the fixed wall text; requests never carry text of their own
SHUTDOWN_TEXT = "magicstick-host: restart requested from the appliance dashboard"
POWEROFF_TEXT = "magicstick-host: power-off requested from the appliance dashboard"

_SCHEDULED_PHASE = {"reboot": "RebootScheduled", "poweroff": "PoweroffScheduled"}


def scheduled_phase(action: str) -> str:
    return _SCHEDULED_PHASE["poweroff" if action == "poweroff" else "reboot"]


def shutdown_step(action: str, limits: Limits, why: str = "") -> RunStep:
    """An orderly shutdown in about a minute, never a reset. GPU operations restart ("reboot")."""
    mode = "poweroff" if action == "poweroff" else "reboot"
    what = "restart" if mode == "reboot" else "shut down"
    return RunStep(
        step=SCHEDULE_SHUTDOWN,
        inputs={
            "mode": mode,
            "delayMinutes": limits.shutdown_delay_min,
            "text": SHUTDOWN_TEXT if mode == "reboot" else POWEROFF_TEXT,
        },
        phase_on_done=_SCHEDULED_PHASE[mode],
        message_on_done=(
            f"{why}The computer will {what} in about {limits.shutdown_delay_min} minute(s) "
            "(an orderly shutdown). Save your work."
        ),
        message_on_failure="The shutdown could not be scheduled; nothing was retried.",
        uses_reboot=True,
    )


def decide_power(op: Operation, now: Situation) -> Decision:
    ev, boottime, limits = now.ev, now.boottime, now.limits
    if ev.boot_id is None:
        return Wait("Waiting: this host's boot ID cannot be read right now.")
    open_step = op.open_step
    if open_step is not None:
        return classify_shutdown(op, ev)
    if op.phase == "Accepted":
        if ev.services.shutdown_scheduled is not None:
            # someone else scheduled one after intake: never replace it, never add a second
            return SetPhase(
                "Failed",
                "Another shutdown was scheduled on this host before ours; nothing was done.",
            )
        return shutdown_step(op.action, limits)
    if op.phase in _SCHEDULED_PHASE.values():
        return after_shutdown_scheduled(op, ev, boottime, limits)
    return Wait(f"Waiting in phase {op.phase}.")


def waiting_for_new_boot(
    op: Operation, ev: Evidence, boottime: float, limits: Limits, pending: str = ""
) -> Decision | None:
    """In a *Scheduled phase: None once a new boot is observed, else Wait or Failed."""
    if ev.boot_id != op.phase_boot_id:
        return None
    waited = boottime - op.phase_since_boottime
    if waited > limits.reboot_observe_deadline_s:
        return SetPhase(
            "Failed",
            f"No new boot was observed {int(limits.reboot_observe_deadline_s)} s after the "
            "shutdown was scheduled; nothing was repeated. Check the console; a shutdown may "
            f"have been cancelled.{pending}",
        )
    return Wait(op.message)


def after_shutdown_scheduled(
    op: Operation, ev: Evidence, boottime: float, limits: Limits
) -> Decision:
    still = waiting_for_new_boot(op, ev, boottime, limits)
    if still is not None:
        return still
    if op.action == "poweroff":
        return SetPhase(
            "Succeeded",
            "The computer was shut down and has started again. The worker saw it come back; "
            "it cannot prove the physical power-off.",
        )
    return SetPhase("Succeeded", "The computer restarted (a new boot was observed).")


def classify_shutdown(op: Operation, ev: Evidence) -> ClassifiedStep:
    """The shutdown intent has no outcome: did `shutdown` run? Never run it again to find out."""
    step = op.open_step
    assert step is not None
    scheduled = ev.services.shutdown_scheduled
    wanted = step.inputs.get("mode")
    phase = scheduled_phase(op.action)
    if ev.boot_id is not None and ev.boot_id != step.boot_id:
        # the shutdown was never seen scheduled: this boot may have had another cause (a power
        # cut, someone at the console), so the restart is not claimed
        return ClassifiedStep(
            "unknown",
            "a new boot was observed, but the scheduled shutdown was not confirmed",
            SetPhase(
                "Interrupted",
                "A new boot was observed, but the scheduled shutdown was not confirmed: the "
                "worker stopped before it could see `shutdown` take effect, so the restart may "
                "have had another cause. Nothing was repeated.",
                outcome="uncertain",
            ),
        )
    if scheduled is not None and scheduled.mode == wanted:
        return ClassifiedStep(
            "classified-done",
            f"/run/systemd/shutdown/scheduled shows a pending {wanted}",
            SetPhase(
                phase,
                f"The {wanted} is scheduled (confirmed from the host's schedule). Save your work.",
            ),
        )
    return ClassifiedStep(
        "unknown",
        "no pending shutdown and no new boot",
        SetPhase(
            "Interrupted",
            "The worker stopped while scheduling the shutdown, and the host shows neither a "
            "pending shutdown nor a new boot. Nothing was repeated; create a new request if "
            "you still want it.",
            outcome="uncertain",
        ),
    )
