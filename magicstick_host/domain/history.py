"""The journal as people read it (`magicstick-host history`), and the entries the tick writes.

Pure. A journal entry (schemas/journal.schema.json) is one committed transition or one event
of the store or the console; `build_history` groups them into past operations, each with its
transitions, the boots it saw and its outcome, as `fwupdmgr get-history` lists updates.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from magicstick_host.domain.canonical import sha256_hex
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.phase import TERMINAL_PHASES, Phase
from magicstick_host.domain.state import State
from magicstick_host.domain.times import rfc3339

if TYPE_CHECKING:
    from typing import Any

HISTORY_SCHEMA_VERSION = 1
# saves that only record what was published: not transitions, never journaled
PUBLISH_EVENTS = frozenset({"status-published", "report-published", "rejection-published"})
_MAX_SHOWN_MESSAGE = 2048


def evidence_digest(ev: Evidence) -> str:
    """What a journal entry records of the host's evidence: its boot, kernel and display GPUs."""
    return sha256_hex({"boot": ev.boot_id, "kernel": ev.kernel.release, "pci": ev.pci.display_ids})


def is_transition(event: str) -> bool:
    return event not in PUBLISH_EVENTS


def transition_entry(
    event: str, state: State, *, at: str, boot_id: str, evidence_digest: str
) -> dict[str, Any]:
    """The journal entry of a tick's transition (the store adds `seq`).

    A rejection is about the rejected request (the newest processed entry), not about the
    operation the state still holds."""
    if event == "rejected" and state.processed:
        rejected = state.processed[-1]
        subject = {
            "requestUid": rejected.request_uid,
            "requestId": rejected.request_id,
            "action": str((rejected.pending_status or {}).get("action", "")),
            "phase": rejected.phase,
            "message": str((rejected.pending_status or {}).get("message", "")),
            "outcome": "",
        }
    else:
        op = state.operation
        subject = {
            "requestUid": op.request_uid if op else "",
            "requestId": op.request_id if op else "",
            "action": op.action if op else "",
            "phase": str(op.phase) if op else "",
            "message": op.message if op else "",
            "outcome": op.outcome if op else "",
        }
    return {
        "at": at,
        "bootId": boot_id,
        "event": event,
        **subject,
        "evidenceDigest": evidence_digest,
    }


def _seq(entry: dict[str, Any]) -> int | None:
    value = entry.get("seq")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str:
    return value[:_MAX_SHOWN_MESSAGE] if isinstance(value, str) else ""


def _subject(entry: dict[str, Any]) -> dict[str, str]:
    """Which operation an entry belongs to; a "recovered" entry carries the archived one."""
    archived = entry.get("operation")
    if entry.get("event") == "recovered" and isinstance(archived, dict):
        phase = _text(archived.get("phase"))
        return {
            "requestUid": _text(archived.get("requestUid")),
            "requestId": _text(archived.get("requestId")),
            "action": _text(archived.get("action")),
            # recover archives an active operation as Interrupted (app_console.recover)
            "phase": phase if phase in TERMINAL_PHASES else str(Phase.INTERRUPTED),
        }
    return {
        key: _text(entry.get(key)) for key in ("requestUid", "requestId", "action", "phase")
    }


def _message(entry: dict[str, Any]) -> str:
    for key in ("message", "reason"):
        if _text(entry.get(key)):
            return _text(entry.get(key))
    if entry.get("event") == "recovered":
        return f"recovered at the console of {_text(entry.get('node')) or 'this host'}"
    return ""


def build_history(
    entries: list[dict[str, Any]],
    *,
    observed_at: datetime,
    journal: str,
    journal_error: str = "",
    skipped_lines: int = 0,
    pending: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The `history --json` document. `pending` is the state's newest entry when the journal
    does not have it yet (the next tick appends it)."""
    seqs = {_seq(e) for e in entries}
    rows = [(e, False) for e in entries]
    if pending is not None and _seq(pending) not in seqs:
        rows.append((pending, True))
    operations: dict[str, dict[str, Any]] = {}
    events: list[dict[str, Any]] = []
    for entry, is_pending in rows:
        subject = _subject(entry)
        row: dict[str, Any] = {
            "seq": _seq(entry),
            "at": _text(entry.get("at")) or _text(entry.get("time")),
            "event": _text(entry.get("event")),
            "phase": subject["phase"],
            "bootId": _text(entry.get("bootId")),
            "message": _message(entry),
        }
        if is_pending:
            row["pending"] = True
        key = subject["requestUid"] or subject["requestId"]
        if not key:
            events.append(row)
            continue
        op = operations.setdefault(
            key,
            {
                "requestId": subject["requestId"],
                "requestUid": subject["requestUid"],
                "action": subject["action"],
                "outcome": "",
                "uncertain": False,
                "startedAt": row["at"],
                "endedAt": None,
                "boots": [],
                "transitions": [],
            },
        )
        op["requestId"] = op["requestId"] or subject["requestId"]
        op["action"] = op["action"] or subject["action"]
        if row["bootId"] and row["bootId"] not in op["boots"]:
            op["boots"].append(row["bootId"])
        if subject["phase"]:
            op["outcome"] = subject["phase"]
            op["endedAt"] = row["at"] if subject["phase"] in TERMINAL_PHASES else None
        op["uncertain"] = op["uncertain"] or entry.get("outcome") == "uncertain"
        op["transitions"].append(row)
    listed = list(operations.values())
    for op in listed:
        if op["outcome"] not in TERMINAL_PHASES:
            op["outcome"] = "in progress" if op["outcome"] else "unknown"
    return {
        "schemaVersion": HISTORY_SCHEMA_VERSION,
        "kind": "magicstick-host.history",
        "observedAt": rfc3339(observed_at),
        "journal": journal,
        "journalError": journal_error,
        "skippedLines": skipped_lines,
        "operations": listed,
        "events": events,
    }


def _short(value: str, n: int = 12) -> str:
    return value if len(value) <= n else value[:n] + "…"


def _row_line(row: dict[str, Any]) -> str:
    seq = f"#{row['seq']}" if row["seq"] is not None else "#?"
    boot = f" boot {_short(row['bootId'], 8)}" if row["bootId"] else ""
    pending = " (not yet in the journal)" if row.get("pending") else ""
    phase = f" {row['phase']}" if row["phase"] else ""
    message = f": {row['message']}" if row["message"] else ""
    return f"    {row['at'] or '?'} {seq:>6} {row['event']}{phase}{boot}{pending}{message}"


def render_history(doc: dict[str, Any]) -> str:
    lines = [f"Journal:    {doc['journal']}"]
    if doc["journalError"]:
        lines.append(f"UNREADABLE: {doc['journalError']}")
    if doc["skippedLines"]:
        lines.append(f"Skipped:    {doc['skippedLines']} unreadable line(s)")
    if not doc["operations"] and not doc["events"]:
        lines.append("No operations recorded.")
    for op in doc["operations"]:
        uncertain = " (uncertain)" if op["uncertain"] else ""
        lines.append("")
        lines.append(
            f"{op['action'] or 'unknown action'}, request {op['requestId'] or '?'}: "
            f"{op['outcome']}{uncertain}"
        )
        ended = op["endedAt"] or "-"
        lines.append(f"  started {op['startedAt'] or '?'}, ended {ended}")
        boots = ", ".join(_short(b, 8) for b in op["boots"]) or "none recorded"
        lines.append(f"  boots: {boots}")
        lines += [_row_line(row) for row in op["transitions"]]
    if doc["events"]:
        lines.append("")
        lines.append("Worker events:")
        lines += [_row_line(row) for row in doc["events"]]
    return "\n".join(lines)
