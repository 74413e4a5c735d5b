"""state.json back into a State: each operation's `data` as the record its action declares.

The reverse of `State.to_json` (domain/state.py). The state store checks the document against
schemas/state.schema.json first; this raises KeyError, TypeError or ValueError for anything
else it cannot read (the store treats that as a corrupt file). Files written by earlier
versions of this worker load as they are: a record field added since has a default, and the
original worker's migrated note (`data.legacy`) becomes `Operation.legacy`. Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.convergence.run import ConvergenceRun
from magicstick_host.domain.operations.registry import data_type
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.records import NoData, record_from_json
from magicstick_host.domain.state import (
    Block,
    LegacyNote,
    Operation,
    ProcessedRequest,
    State,
    Step,
)

if TYPE_CHECKING:
    from typing import Any


def step_from_json(doc: dict[str, Any]) -> Step:
    return Step(
        name=doc["name"],
        inputs=dict(doc["inputs"]),
        boot_id=doc["bootId"],
        started_at=doc["startedAt"],
        started_boottime=float(doc["startedBoottime"]),
        outcome=doc["outcome"],
        finished_at=doc["finishedAt"],
        detail=doc["detail"],
    )


def legacy_note_from_json(doc: Any) -> LegacyNote:
    if not isinstance(doc, dict):
        raise ValueError("data.legacy: not an object")
    unknown = doc["unknown"]
    if not isinstance(unknown, list) or not all(isinstance(u, str) for u in unknown):
        raise ValueError("data.legacy.unknown: not a list of strings")
    return LegacyNote(str(doc["migratedAt"]), str(doc["phase"]), tuple(unknown))


def record_type(action: str, data: dict[str, Any], legacy: Any, phase: Phase) -> type:
    """A finished operation migrated from the original worker, of an action it did not run
    (it recorded nothing for it), keeps no data, even once this worker runs that action."""
    if legacy is not None and not data and phase.terminal:
        return NoData
    return data_type(action)


def operation_from_json(doc: dict[str, Any]) -> Operation:
    data = dict(doc["data"])
    legacy = data.pop("legacy", None)
    action = doc["action"]
    return Operation(
        request_uid=doc["requestUid"],
        request_id=doc["requestId"],
        action=action,
        namespace=doc["namespace"],
        name=doc["name"],
        request_digest=doc["requestDigest"],
        plan_id=doc["planId"],
        accepted_boot_id=doc["acceptedBootId"],
        accepted_at=doc["acceptedAt"],
        phase=Phase(doc["phase"]),
        message=doc["message"],
        updated_at=doc["updatedAt"],
        phase_boot_id=doc["phaseBootId"],
        phase_since_boottime=float(doc["phaseSinceBoottime"]),
        reboots_used=int(doc["rebootsUsed"]),
        reboot_budget=int(doc["rebootBudget"]),
        steps=tuple(step_from_json(s) for s in doc["steps"]),
        data=record_from_json(record_type(action, data, legacy, Phase(doc["phase"])), data),
        published_status_digest=doc["publishedStatusDigest"],
        status_refused=doc.get("statusRefused", ""),
        request_expires_at=doc.get("requestExpiresAt", ""),
        outcome=doc["outcome"],
        legacy=legacy_note_from_json(legacy) if legacy is not None else None,
    )


def state_from_json(doc: dict[str, Any]) -> State:
    op = doc.get("operation")
    block = doc.get("block")
    return State(
        operation=operation_from_json(op) if op else None,
        processed=tuple(
            ProcessedRequest(
                p["requestUid"],
                p["requestId"],
                p["phase"],
                p.get("pendingStatus"),
                p.get("namespace", ""),
                p.get("name", ""),
            )
            for p in doc["processed"]
        ),
        block=(
            Block(block["code"], block["message"], block["since"], block.get("archived", ""))
            if block
            else None
        ),
        last_report_digest=doc.get("lastReportDigest", ""),
        last_report_at=doc.get("lastReportAt", ""),
        last_journal=doc.get("lastJournal"),
        convergence=(
            ConvergenceRun.from_json(doc["convergence"]) if doc.get("convergence") else None
        ),
    )
