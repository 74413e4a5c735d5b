"""The next decision for the current operation: the same dispatch for every operation.

Too late to start → a boot ID that cannot be read waits → a host restarted before the first step
stops → an open step (intent without outcome) is classified → otherwise the decision of the
operation's current phase. A phase the operation has no decision for is a defect: it is stopped
(Interrupted), never waited on.
"""

from __future__ import annotations

from magicstick_host.domain.decisions import Decision, SetPhase, Situation, Wait
from magicstick_host.domain.operations.kind import OperationKind
from magicstick_host.domain.operations.lifecycle import restarted_before_start, too_late
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.state import Operation


def decide(kind: OperationKind, op: Operation, now: Situation) -> Decision:
    late = too_late(op, now.wall)
    if late is not None:
        return late
    if now.ev.boot_id is None:
        return Wait("Waiting: this host's boot ID cannot be read right now.")
    restarted = restarted_before_start(op, now.ev.boot_id)
    if restarted is not None:
        return restarted
    if op.open_step is not None:
        return kind.classify(op, now)
    decision = kind.phases.get(op.phase)
    if decision is None:
        return SetPhase(
            Phase.INTERRUPTED,
            f"This worker has no decision for {op.action} in phase {op.phase} (a defect); the "
            "operation was stopped. Nothing was repeated.",
            outcome="uncertain",
        )
    return decision(op, now)
