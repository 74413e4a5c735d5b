"""reboot / poweroff decisions (operations.md), as pure functions of op, evidence and time."""

from __future__ import annotations

from datetime import UTC, datetime

from magicstick_host.domain.decisions import (
    ClassifiedStep,
    Decision,
    RunStep,
    SetPhase,
    Situation,
    Wait,
)
from magicstick_host.domain.evidence import Evidence, ScheduledShutdown, ServicesInfo
from magicstick_host.domain.limits import DEFAULT_LIMITS
from magicstick_host.domain.operations.decide import decide
from magicstick_host.domain.operations.registry import OPERATIONS
from magicstick_host.domain.operations.shutdown_steps import SCHEDULE_SHUTDOWN
from magicstick_host.domain.state import Operation, Step
from tests.harness.factories import operation as make_operation

BOOT = "11111111-1111-4111-8111-111111111111"
NEW_BOOT = "22222222-2222-4222-8222-222222222222"


def decide_power(op: Operation, now: Situation) -> Decision:
    return decide(OPERATIONS[op.action], op, now)


def operation(action: str = "reboot", phase: str = "Accepted", **kw: object) -> Operation:
    return make_operation(action, phase, boot_id=BOOT, **kw)


def evidence(boot: str | None = BOOT, scheduled: str | None = None) -> Evidence:
    sched = ScheduledShutdown(mode=scheduled, usec=1) if scheduled else None
    return Evidence(boot_id=boot, services=ServicesInfo(shutdown_scheduled=sched))


def at(ev: Evidence, boottime: float) -> Situation:
    return Situation(ev=ev, wall=datetime(2026, 11, 30, tzinfo=UTC), boottime=boottime,
                     limits=DEFAULT_LIMITS)


def intent(mode: str = "reboot") -> Step:
    return Step(SCHEDULE_SHUTDOWN, {"mode": mode}, BOOT, "2026-11-30T12:00:01Z", 101.0)


def test_accepted_reboot_schedules_an_orderly_shutdown_counted_against_the_budget() -> None:
    decision = decide_power(operation(), at(evidence(), 101.0))
    assert isinstance(decision, RunStep)
    assert decision.inputs["mode"] == "reboot" and decision.inputs["delayMinutes"] == 1
    assert decision.uses_reboot and decision.phase_on_done == "RebootScheduled"
    assert "Save your work" in decision.message_on_done


def test_accepted_poweroff_schedules_a_poweroff() -> None:
    decision = decide_power(operation("poweroff"), at(evidence(), 101.0))
    assert isinstance(decision, RunStep)
    assert decision.inputs["mode"] == "poweroff"
    assert decision.phase_on_done == "PoweroffScheduled"


def test_someone_elses_shutdown_is_never_replaced() -> None:
    decision = decide_power(operation(), at(evidence(scheduled="reboot"), 101.0))
    assert isinstance(decision, SetPhase) and decision.phase == "Failed"


def test_same_boot_keeps_waiting_until_the_deadline_then_fails_without_repeating() -> None:
    op = operation(phase="RebootScheduled")
    assert isinstance(decide_power(op, at(evidence(), 100.0 + 600)), Wait)
    late = decide_power(op, at(evidence(), 100.0 + 601))
    assert isinstance(late, SetPhase) and late.phase == "Failed"
    assert "nothing was repeated" in late.message


def test_a_new_boot_is_success() -> None:
    decision = decide_power(
        operation(phase="RebootScheduled"), at(evidence(NEW_BOOT), 5.0)
    )
    assert isinstance(decision, SetPhase) and decision.phase == "Succeeded"


def test_poweroff_success_says_it_cannot_prove_the_power_off() -> None:
    decision = decide_power(
        operation("poweroff", phase="PoweroffScheduled"), at(evidence(NEW_BOOT), 5.0)
    )
    assert isinstance(decision, SetPhase) and decision.phase == "Succeeded"
    assert "cannot prove the physical power-off" in decision.message


def test_unknown_boot_id_waits_never_acts() -> None:
    assert isinstance(decide_power(operation(), at(evidence(None), 1.0)), Wait)


def test_an_unfinished_intent_with_the_schedule_present_is_classified_done() -> None:
    op = operation(steps=(intent(),))
    decision = decide_power(op, at(evidence(scheduled="reboot"), 102.0))
    assert isinstance(decision, ClassifiedStep)
    assert decision.outcome == "classified-done" and decision.then.phase == "RebootScheduled"


def test_a_new_boot_after_an_unconfirmed_shutdown_is_not_claimed_as_the_restart() -> None:
    # the tick died between the intent and `shutdown`; then the host restarted for another
    # reason (a power cut): the worker cannot claim the restart as its own
    op = operation(steps=(intent(),))
    decision = decide_power(op, at(evidence(NEW_BOOT), 3.0))
    assert isinstance(decision, ClassifiedStep) and decision.outcome == "unknown"
    assert decision.then.phase == "Interrupted" and decision.then.outcome == "uncertain"
    assert "new boot was observed" in decision.then.message
    assert "not confirmed" in decision.then.message


def test_an_unfinished_intent_without_any_trace_is_interrupted_never_replayed() -> None:
    op = operation(steps=(intent(),))
    decision = decide_power(op, at(evidence(), 102.0))
    assert isinstance(decision, ClassifiedStep) and decision.outcome == "unknown"
    assert decision.then.phase == "Interrupted"


def test_a_schedule_of_the_other_mode_does_not_count_as_ours() -> None:
    op = operation(steps=(intent("reboot"),))
    decision = decide_power(op, at(evidence(scheduled="poweroff"), 102.0))
    assert isinstance(decision, ClassifiedStep) and decision.then.phase == "Interrupted"
