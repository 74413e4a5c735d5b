"""The orderly shutdown every restarting operation uses: schedule it, wait for the new boot that
proves it, and classify a scheduling step that has no outcome. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.decisions import ClassifiedStep, Decision, RunStep, SetPhase, Wait
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.limits import Limits
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.state import Operation

if TYPE_CHECKING:
    from typing import Literal

SCHEDULE_SHUTDOWN = "schedule-shutdown"
# the fixed wall text; requests never carry text of their own
SHUTDOWN_TEXT = "magicstick-host: restart requested from the appliance dashboard"
POWEROFF_TEXT = "magicstick-host: power-off requested from the appliance dashboard"

if TYPE_CHECKING:
    ShutdownMode = Literal["reboot", "poweroff"]


def shutdown_step(mode: ShutdownMode, limits: Limits, *, then: Phase, why: str = "") -> RunStep:
    """An orderly shutdown in about a minute, never a reset; `then` is the phase that waits
    for the new boot."""
    what = "restart" if mode == "reboot" else "shut down"
    return RunStep(
        step=SCHEDULE_SHUTDOWN,
        inputs={
            "mode": mode,
            "delayMinutes": limits.shutdown_delay_min,
            "text": SHUTDOWN_TEXT if mode == "reboot" else POWEROFF_TEXT,
        },
        phase_on_done=then,
        message_on_done=(
            f"{why}The computer will {what} in about {limits.shutdown_delay_min} minute(s) "
            "(an orderly shutdown). Save your work."
        ),
        message_on_failure="The shutdown could not be scheduled; nothing was retried.",
        uses_reboot=True,
    )


def waiting_for_new_boot(
    op: Operation, ev: Evidence, boottime: float, limits: Limits, pending: str = ""
) -> Decision | None:
    """In a *Scheduled phase: None once a new boot is observed, else Wait or Failed."""
    if ev.boot_id != op.phase_boot_id:
        return None
    waited = boottime - op.phase_since_boottime
    if waited > limits.reboot_observe_deadline_s:
        return SetPhase(
            Phase.FAILED,
            f"No new boot was observed {int(limits.reboot_observe_deadline_s)} s after the "
            "shutdown was scheduled; nothing was repeated. Check the console; a shutdown may "
            f"have been cancelled.{pending}",
        )
    return Wait(op.message)


def classify_shutdown(op: Operation, ev: Evidence, *, scheduled: Phase) -> ClassifiedStep:
    """The shutdown intent has no outcome: did `shutdown` run? Never run it again to find out.
    `scheduled` is the phase the step leads to when it did."""
    step = op.open_step
    assert step is not None
    pending = ev.services.shutdown_scheduled
    wanted = step.inputs.get("mode")
    if ev.boot_id is not None and ev.boot_id != step.boot_id:
        # the shutdown was never seen scheduled: this boot may have had another cause (a power
        # cut, someone at the console), so the restart is not claimed
        return ClassifiedStep(
            "unknown",
            "a new boot was observed, but the scheduled shutdown was not confirmed",
            SetPhase(
                Phase.INTERRUPTED,
                "A new boot was observed, but the scheduled shutdown was not confirmed: the "
                "worker stopped before it could see `shutdown` take effect, so the restart may "
                "have had another cause. Nothing was repeated.",
                outcome="uncertain",
            ),
        )
    if pending is not None and pending.mode == wanted:
        return ClassifiedStep(
            "classified-done",
            f"/run/systemd/shutdown/scheduled shows a pending {wanted}",
            SetPhase(
                scheduled,
                f"The {wanted} is scheduled (confirmed from the host's schedule). Save your work.",
            ),
        )
    return ClassifiedStep(
        "unknown",
        "no pending shutdown and no new boot",
        SetPhase(
            Phase.INTERRUPTED,
            "The worker stopped while scheduling the shutdown, and the host shows neither a "
            "pending shutdown nor a new boot. Nothing was repeated; create a new request if "
            "you still want it.",
            outcome="uncertain",
        ),
    )
