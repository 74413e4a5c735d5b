"""reboot and poweroff (operations.md): an orderly shutdown, proven by the new boot. Pure.

Accepted → RebootScheduled / PoweroffScheduled (`shutdown -r|-P +1`, budget 1) → a new boot →
Succeeded; no new boot within 600 s → Failed. Never a second shutdown, never over someone
else's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.decisions import ClassifiedStep, Decision, SetPhase, Situation, Wait
from magicstick_host.domain.limits import Limits
from magicstick_host.domain.operations import offer_rules
from magicstick_host.domain.operations.kind import LegacyRules, OperationKind, no_data
from magicstick_host.domain.operations.shutdown_steps import (
    SCHEDULE_SHUTDOWN,
    classify_shutdown,
    shutdown_step,
    waiting_for_new_boot,
)
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.records import NoData
from magicstick_host.domain.request import HostFacts
from magicstick_host.domain.state import Operation

if TYPE_CHECKING:
    from typing import Any

    from magicstick_host.domain.operations.shutdown_steps import ShutdownMode


def check_request(spec: dict[str, Any], host: HostFacts, limits: Limits) -> str | None:
    action = spec.get("action")
    if spec.get("planId", ""):
        return f"A {action} request carries no plan id."
    if spec["allowExperimental"] or spec["experimentMode"]:
        return f"A {action} request must not set the experimental flags."
    return None


def _power_kind(action: str, mode: ShutdownMode, scheduled: Phase) -> OperationKind:
    def accepted(op: Operation, now: Situation) -> Decision:
        if now.ev.services.shutdown_scheduled is not None:
            # someone else scheduled one after intake: never replace it, never add a second
            return SetPhase(
                Phase.FAILED,
                "Another shutdown was scheduled on this host before ours; nothing was done.",
            )
        return shutdown_step(mode, now.limits, then=scheduled)

    def shutdown_due(op: Operation, now: Situation) -> Decision:
        still = waiting_for_new_boot(op, now.ev, now.boottime, now.limits)
        if still is not None:
            return still
        if mode == "poweroff":
            return SetPhase(
                Phase.SUCCEEDED,
                "The computer was shut down and has started again. The worker saw it come "
                "back; it cannot prove the physical power-off.",
            )
        return SetPhase(Phase.SUCCEEDED, "The computer restarted (a new boot was observed).")

    def classify(op: Operation, now: Situation) -> ClassifiedStep | Wait:
        return classify_shutdown(op, now.ev, scheduled=scheduled)

    return OperationKind(
        action=action,
        request_fields=frozenset(),
        check_request=check_request,
        offered=offer_rules.always,
        reads=(),
        data=NoData,
        start=no_data,
        phases={Phase.ACCEPTED: accepted, scheduled: shutdown_due},
        classify=classify,
        restart_budget=1,
        steps=frozenset({SCHEDULE_SHUTDOWN}),
        legacy=LegacyRules(data=lambda current: (NoData(), []), resumes={scheduled: "shutdown"}),
    )


REBOOT = _power_kind("reboot", "reboot", Phase.REBOOT_SCHEDULED)
POWEROFF = _power_kind("poweroff", "poweroff", Phase.POWEROFF_SCHEDULED)
