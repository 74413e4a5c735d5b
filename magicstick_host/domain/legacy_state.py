"""The original worker's state.json, migrated on first load (contract.md, "Upgrading from the
original worker"). Pure: a function of the legacy document and the clock.

The legacy file is `{"completed": [requestId, ...], "current": {...} | null}` (no
`schemaVersion`, schemas/legacy-state.schema.json). It is not corrupt:
- `completed` becomes processed-request memory. The original kept request IDs only, so these
  entries have no UID (""); intake rejects a replay by its request ID.
- `current` in a terminal phase is kept as the last operation.
- `current` in progress continues only where this worker can prove what happens next:
  - `RebootScheduled` (reboot, prepare-gpu, configure-gpu-memory) and `PoweroffScheduled`
    (poweroff): the phase clock runs from `scheduledAt` in the boot it was scheduled in, so a
    new boot means the restart happened and the same boot past the deadline is Failed;
  - `Registering`, and the legacy `Validating` (prepare-gpu): this worker's registration checks,
    in the registration boot, from the registration start.
  Without the boot the restart or registration was in, nothing can be proven: Interrupted.
- Anything else in progress becomes Interrupted ("started by the previous worker version; not
  resumed"), never replayed.

The legacy file has no request spec, so a migrated operation has no request digest and no
HostOperation name yet (both ""): `adopt_request` records them on the first supervise, from the
object of the same UID. The spec is immutable (the CRD's `self == oldSelf`), so the spec seen
then is the spec the original worker accepted; another object of that name has another UID and
stops the operation as "execution state removed".

Facts a later stage checks that the legacy file does not hold are recorded as None and listed
in `Operation.legacy.unknown` (`data.legacy.unknown` on disk), so each decision can tell
"unknown" from a recorded value. What is particular to an action (its data, which of its phases
continue and how) is its operation module's `LegacyRules` (domain/operations/kind.py).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from magicstick_host.domain.legacy_values import nonempty_str, plan_of
from magicstick_host.domain.limits import DEFAULT_LIMITS
from magicstick_host.domain.operations.registry import kind_of
from magicstick_host.domain.phase import LEGACY_COMPLETED, Phase, parse_phase
from magicstick_host.domain.records import NoData
from magicstick_host.domain.request import request_digest
from magicstick_host.domain.state import LegacyNote, Operation, ProcessedRequest, State
from magicstick_host.domain.times import rfc3339
from magicstick_host.lite_dataclasses import dataclass, replace

if TYPE_CHECKING:
    from typing import Any

    from magicstick_host.domain.operations.kind import LegacyResume

NAMESPACE = "ai-system"
NOT_RESUMED = "started by the previous worker version; not resumed"
MIGRATED_EVENT = "migrated-from-legacy"


def is_legacy_document(doc: Any) -> bool:
    """The original worker's shape: an object without `schemaVersion` that has `completed`."""
    return isinstance(doc, dict) and "schemaVersion" not in doc and "completed" in doc


def epoch_seconds(value: Any) -> float | None:
    """A legacy time (epoch seconds or RFC 3339, as the schema allows) in epoch seconds."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    return None


def _boottime_at(epoch: float | None, *, wall: datetime, boottime: float) -> float:
    """CLOCK_BOOTTIME of a past moment of this boot; a future or unknown one starts now.

    Only meaningful when the moment was in the current boot; in another boot the deadline that
    uses it is never reached, because the decision sees the new boot first."""
    if epoch is None:
        return boottime
    return min(boottime, boottime - (wall.timestamp() - epoch))


def _action_data(current: dict[str, Any]) -> tuple[Any, list[str]]:
    kind = kind_of(str(current["action"]))
    if kind is None or kind.legacy is None:
        return NoData(), []
    return kind.legacy.data(current)


@dataclass(frozen=True)
class _Continuation:
    """How a legacy phase this worker can prove goes on."""

    message: str
    boot: str | None  # the boot the phase ran in; None when the record lacks it
    since: Any  # the legacy time the phase began (epoch seconds or RFC 3339)
    unprovable: str  # why it cannot go on without `boot`


def _resume(cur: dict[str, Any], phase: Phase | None) -> LegacyResume | None:
    kind = kind_of(str(cur["action"]))
    if kind is None or kind.legacy is None or phase is None:
        return None
    return kind.legacy.resumes.get(phase)


def _continuation(cur: dict[str, Any], phase: Phase | None) -> _Continuation | None:
    resume = _resume(cur, phase)
    if resume == "shutdown":
        what = "shutdown" if phase == Phase.POWEROFF_SCHEDULED else "restart"
        return _Continuation(
            f"The {what} was scheduled by the previous worker version; this worker waits for "
            "the new boot that proves it.",
            nonempty_str(cur.get("stageBootId")) or nonempty_str(cur.get("initialBootId")),
            cur.get("scheduledAt"),
            f"the boot the {what} was scheduled in is not recorded, so it cannot be proven",
        )
    if resume == "registration":
        own, other = ("registration", "validation")
        if phase == Phase.VALIDATING:
            own, other = other, own
        since = cur.get(f"{own}StartedAt")
        return _Continuation(
            "Registering (continued from the previous worker version): waiting for the GPU "
            "to register.",
            nonempty_str(cur.get(f"{own}BootId")) or nonempty_str(cur.get(f"{other}BootId")),
            since if since is not None else cur.get(f"{other}StartedAt"),
            "the boot the registration began in is not recorded",
        )
    return None


def migrate_operation(cur: dict[str, Any], *, wall: datetime, boottime: float) -> Operation:
    action, legacy_phase = str(cur["action"]), str(cur["phase"])
    phase = parse_phase(legacy_phase)
    now = rfc3339(wall)
    started = epoch_seconds(cur.get("startedAt"))
    accepted_at = rfc3339(datetime.fromtimestamp(started, UTC)) if started is not None else now
    plan = plan_of(cur)
    legacy_message = cur.get("message") if isinstance(cur.get("message"), str) else ""
    data, unknown = _action_data(cur)
    kind = kind_of(action)
    initial_boot = nonempty_str(cur.get("initialBootId")) or ""
    base = Operation(
        request_uid=str(cur["operationUid"]),
        request_id=str(cur["requestId"]),
        action=action,
        namespace=NAMESPACE,
        name="",  # adopt_request: the HostOperation this tick reads
        request_digest="",  # adopt_request: from the spec of the object with this UID
        plan_id=str(plan.get("id") or ""),
        accepted_boot_id=initial_boot,
        accepted_at=accepted_at,
        phase=phase or Phase.INTERRUPTED,
        message="",
        updated_at=now,
        phase_boot_id=initial_boot,
        phase_since_boottime=boottime,
        reboots_used=int(cur.get("rebootCount") or 0),
        reboot_budget=kind.restart_budget if kind is not None else 0,
        data=data,
        legacy=LegacyNote(migrated_at=now, phase=legacy_phase, unknown=tuple(sorted(unknown))),
    )
    if phase is not None and phase.terminal:
        message = legacy_message or f"Finished ({phase}) under the previous worker version."
        return replace(base, message=message)  # Operation clips it
    cont = _continuation(cur, phase)
    if cont is not None and cont.boot is not None:
        reboots = base.reboots_used
        if _resume(cur, phase) == "shutdown":
            reboots = max(reboots, 1)  # a restart was scheduled: it counts against the budget
        since = _boottime_at(epoch_seconds(cont.since), wall=wall, boottime=boottime)
        return replace(
            base,
            message=cont.message,
            phase_boot_id=cont.boot,
            phase_since_boottime=since,
            reboots_used=reboots,
        )
    why = f" ({cont.unprovable})" if cont is not None else ""
    return replace(
        base,
        phase=Phase.INTERRUPTED,
        message=(
            f"The {action} operation (phase {legacy_phase}) was {NOT_RESUMED}{why}. Nothing was "
            "repeated; check the host, then create a new request if it is still wanted."
        ),
        outcome="uncertain",
    )


def migrate_legacy_state(
    doc: dict[str, Any],
    *,
    wall: datetime,
    boottime: float,
    keep: int = DEFAULT_LIMITS.processed_request_ids_kept,
) -> State:
    """The State for a legacy document that matches schemas/legacy-state.schema.json."""
    cur = doc.get("current")
    op = migrate_operation(cur, wall=wall, boottime=boottime) if cur else None
    # the original's order, once each; no UID: intake rejects a replay by its request ID
    ids = [i for i in dict.fromkeys(doc["completed"]) if op is None or i != op.request_id]
    processed = [ProcessedRequest("", i, LEGACY_COMPLETED) for i in ids]
    if op is not None:  # this entry knows the UID too
        phase = op.phase if op.terminal else Phase.ACCEPTED
        processed.append(ProcessedRequest(op.request_uid, op.request_id, phase))
    return State(operation=op, processed=tuple(processed[-keep:]))


def migration_summary(doc: dict[str, Any], state: State) -> dict[str, Any]:
    """The facts of the migration journal entry."""
    cur = doc.get("current") or {}
    op = state.operation
    return {
        "event": MIGRATED_EVENT,
        "completed": len(doc["completed"]),
        "requestUid": op.request_uid if op else "",
        "requestId": op.request_id if op else "",
        "action": op.action if op else "",
        "legacyPhase": str(cur.get("phase", "")),
        "phase": str(op.phase) if op else "",
        "message": op.message if op else "",
        "unknown": list(op.legacy.unknown) if op and op.legacy else [],
    }


def adopt_request(op: Operation, request: dict[str, Any] | None, name: str) -> Operation:
    """A migrated operation (name "") takes the HostOperation name the tick reads and, when the
    object is the one the previous worker accepted (same UID), the digest of its spec."""
    if op.name:
        return op
    meta = (request or {}).get("metadata") or {}
    if request is None or str(meta.get("uid", "")) != op.request_uid or op.request_digest:
        return replace(op, name=name)
    return replace(
        op, name=name, request_digest=request_digest(op.request_uid, request.get("spec") or {})
    )
