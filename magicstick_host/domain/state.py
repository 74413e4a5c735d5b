"""The local state: the truth about the current operation, kept across reboots.

Plain dataclasses; `to_json` here, the reverse (which needs the registry to know each action's
data record) in state_codec.py. The state store (ports/state_store.py) writes the JSON atomically
and validates it against schemas/state.schema.json; this module never does I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.convergence.run import ConvergenceRun
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.records import NoData, record_to_json
from magicstick_host.domain.text import MAX_MESSAGE, MAX_STATUS_REFUSED, clip_message
from magicstick_host.lite_dataclasses import dataclass, field, replace

if TYPE_CHECKING:
    from typing import Any

STATE_SCHEMA_VERSION = 1


def _clip_field(obj: object, name: str, limit: int) -> None:
    """In a (frozen) constructor: the field's text clipped to its schema's limit."""
    text = getattr(obj, name)
    clipped = clip_message(text, limit)
    if clipped is not text:
        object.__setattr__(obj, name, clipped)


@dataclass(frozen=True)
class Step:
    """One side effect under the step protocol: the intent is persisted before the effect."""

    name: str  # e.g. "schedule-shutdown"
    inputs: dict[str, Any]
    boot_id: str
    started_at: str  # RFC 3339 wall time
    started_boottime: float
    # None: intent without outcome (the effect may or may not have happened)
    outcome: str | None = None  # "done" | "failed" | "classified-done" | "unknown"
    finished_at: str | None = None
    detail: str = ""  # at most MAX_MESSAGE (domain/text.py): clipped here, whoever made it

    def __post_init__(self) -> None:
        _clip_field(self, "detail", MAX_MESSAGE)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "inputs": self.inputs,
            "bootId": self.boot_id,
            "startedAt": self.started_at,
            "startedBoottime": self.started_boottime,
            "outcome": self.outcome,
            "finishedAt": self.finished_at,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class LegacyNote:
    """How an operation of the original worker was migrated (domain/legacy_state.py)."""

    migrated_at: str
    phase: str  # the original's phase, as it wrote it
    unknown: tuple[str, ...]  # data keys the original did not record (None in the data)

    def to_json(self) -> dict[str, Any]:
        return {"migratedAt": self.migrated_at, "phase": self.phase, "unknown": list(self.unknown)}


@dataclass(frozen=True)
class Operation:
    request_uid: str
    request_id: str
    action: str
    namespace: str
    name: str
    # sha256 over (uid + canonical spec): the spec is immutable, a change means Interrupted.
    # "" (with name "") for an operation migrated from the original worker, which kept no spec:
    # the first supervise records both from the HostOperation (domain/legacy_state.py)
    request_digest: str
    plan_id: str  # the id it was approved against ("" for power actions)
    accepted_boot_id: str
    accepted_at: str
    phase: Phase
    message: str
    updated_at: str
    # when the current phase began, for deadlines: the boot and its CLOCK_BOOTTIME
    phase_boot_id: str
    phase_since_boottime: float
    reboots_used: int = 0
    reboot_budget: int = 0
    steps: tuple[Step, ...] = ()
    # the operation's own record (its module's data type): facts recorded at acceptance (target
    # kernel, selection, identities) and what its steps established since
    data: Any = field(default_factory=NoData)
    # digest of the status last written to the HostOperation; a later tick republishes when
    # the current status differs (the API was down, or the process died before the patch)
    published_status_digest: str = ""
    # why the server refused the last status write (403, 422: e.g. an older CRD); "" when it
    # took it. A refused status is not retried until the status changes.
    status_refused: str = ""
    # "uncertain" when a terminal phase was reached by classification rather than proof
    outcome: str = ""
    # creation + the request lifetime (RFC 3339): an operation still Accepted then never starts
    request_expires_at: str = ""
    # set for an operation migrated from the original worker (kept in `data.legacy` on disk)
    legacy: LegacyNote | None = None

    def __post_init__(self) -> None:
        # the message is the HostOperation status's and the report's: clipped here, once, to
        # their limit, whatever it carries (paths, API or command text)
        _clip_field(self, "message", MAX_MESSAGE)
        _clip_field(self, "status_refused", MAX_STATUS_REFUSED)

    @property
    def terminal(self) -> bool:
        return self.phase.terminal

    @property
    def open_step(self) -> Step | None:
        if self.steps and self.steps[-1].outcome is None:
            return self.steps[-1]
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "requestUid": self.request_uid,
            "requestId": self.request_id,
            "action": self.action,
            "namespace": self.namespace,
            "name": self.name,
            "requestDigest": self.request_digest,
            "planId": self.plan_id,
            "acceptedBootId": self.accepted_boot_id,
            "acceptedAt": self.accepted_at,
            "phase": self.phase,
            "message": self.message,
            "updatedAt": self.updated_at,
            "phaseBootId": self.phase_boot_id,
            "phaseSinceBoottime": self.phase_since_boottime,
            "rebootsUsed": self.reboots_used,
            "rebootBudget": self.reboot_budget,
            "steps": [s.to_json() for s in self.steps],
            "data": {
                **record_to_json(self.data),
                **({"legacy": self.legacy.to_json()} if self.legacy else {}),
            },
            "publishedStatusDigest": self.published_status_digest,
            "statusRefused": self.status_refused,
            "requestExpiresAt": self.request_expires_at,
            "outcome": self.outcome,
        }


@dataclass(frozen=True)
class Block:
    """Why the worker refuses all new work until `recover` (execution state removed, corrupt)."""

    code: str  # "execution-state-removed" | "state-corrupt"
    message: str  # clipped here to MAX_MESSAGE: the report and a rejection quote it
    since: str
    archived: str = ""  # where a corrupt file was moved

    def __post_init__(self) -> None:
        _clip_field(self, "message", MAX_MESSAGE)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "since": self.since,
            "archived": self.archived,
        }


@dataclass(frozen=True)
class ProcessedRequest:
    # "" when unknown: the original worker remembered request IDs only (domain/legacy_state.py)
    request_uid: str
    request_id: str
    # the phase it ended in (or was rejected with); LEGACY_COMPLETED for the original's entries
    phase: str
    # a rejection's HostOperation status still to be written (the API was down); then None
    pending_status: dict[str, Any] | None = None
    namespace: str = ""
    name: str = ""


@dataclass(frozen=True)
class State:
    operation: Operation | None = None
    # newest last; bounded by Limits.processed_request_ids_kept
    processed: tuple[ProcessedRequest, ...] = ()
    block: Block | None = None
    # the last Node report we wrote: its content digest and wall time
    last_report_digest: str = ""
    last_report_at: str = ""
    # the newest journal entry, committed with the state that it describes: a load appends it
    # to the journal if the append was lost (ports/state_store.py, "journal repair")
    last_journal: dict[str, Any] | None = None
    # the last host convergence run (magicstick-host converge), for `status`
    convergence: ConvergenceRun | None = None

    def seen_uid(self, uid: str) -> ProcessedRequest | None:
        if not uid:
            return None
        return next((p for p in self.processed if p.request_uid == uid), None)

    def seen_request_id(self, request_id: str) -> bool:
        return any(p.request_id == request_id for p in self.processed)

    def remember(self, entry: ProcessedRequest, keep: int) -> State:
        def same(p: ProcessedRequest) -> bool:
            if entry.request_uid and p.request_uid:
                return p.request_uid == entry.request_uid
            # an entry without a UID (migrated) is the same request only by its ID
            return not p.request_uid and p.request_id == entry.request_id

        kept = tuple(p for p in self.processed if not same(p))
        return replace(self, processed=(*kept, entry)[-keep:])

    def to_json(self) -> dict[str, Any]:
        return {
            "schemaVersion": STATE_SCHEMA_VERSION,
            "operation": self.operation.to_json() if self.operation else None,
            "processed": [
                {
                    "requestUid": p.request_uid,
                    "requestId": p.request_id,
                    "phase": p.phase,
                    "pendingStatus": p.pending_status,
                    "namespace": p.namespace,
                    "name": p.name,
                }
                for p in self.processed
            ],
            "block": self.block.to_json() if self.block else None,
            "lastReportDigest": self.last_report_digest,
            "lastReportAt": self.last_report_at,
            "lastJournal": self.last_journal,
            "convergence": self.convergence.to_json() if self.convergence else None,
        }
