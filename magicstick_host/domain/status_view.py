"""The console view of the local state (`magicstick-host status`). Pure."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from magicstick_host.domain.inspection import rfc3339
from magicstick_host.domain.state import State

STATUS_SCHEMA_VERSION = 1


def next_step_advice(state: State, node_name: str) -> str:
    if state.block is not None:
        return (
            "The worker is stopped. Review the evidence, then run "
            f"`magicstick-host recover --confirm {node_name}` at the console."
        )
    op = state.operation
    if op is None:
        return "Nothing to do: requests come from the appliance dashboard."
    if op.phase in ("RebootScheduled", "PoweroffScheduled"):
        return "The computer shuts down shortly; nothing to do. Save your work."
    if not op.terminal:
        return "The operation is running; the worker advances it every 15 seconds."
    if op.phase in ("Succeeded", "PreparedUnverified"):
        return "Nothing to do."
    return (
        "Read the message. Nothing is retried automatically; a new confirmed request from the "
        "dashboard is the only way forward."
    )


def build_status(
    state: State | None, *, node_name: str, observed_at: datetime, state_error: str = ""
) -> dict[str, Any]:
    st = state or State()
    op = st.operation
    operation: dict[str, Any] | None = None
    if op is not None:
        operation = {
            "requestId": op.request_id,
            "requestUid": op.request_uid,
            "action": op.action,
            "phase": op.phase,
            "message": op.message,
            "acceptedAt": op.accepted_at,
            "updatedAt": op.updated_at,
            "rebootsUsed": op.reboots_used,
            "rebootBudget": op.reboot_budget,
            "outcome": op.outcome,
            "steps": [
                {
                    "name": s.name,
                    "startedAt": s.started_at,
                    "finishedAt": s.finished_at,
                    "outcome": s.outcome or "in progress (intent recorded)",
                    "detail": s.detail,
                }
                for s in op.steps
            ],
        }
    return {
        "schemaVersion": STATUS_SCHEMA_VERSION,
        "kind": "magicstick-host.status",
        "observedAt": rfc3339(observed_at),
        "node": node_name,
        "stateError": state_error,
        "operation": operation,
        "block": st.block.to_json() if st.block else None,
        "lastReportAt": st.last_report_at or None,
        "processedRequests": len(st.processed),
        "next": next_step_advice(st, node_name)
        if not state_error
        else "The state file cannot be read; run a tick (it archives the file) and then recover.",
    }


def render_status(doc: dict[str, Any]) -> str:
    lines = [f"Node:       {doc['node']}"]
    if doc["stateError"]:
        lines.append(f"State:      UNREADABLE: {doc['stateError']}")
    op = doc["operation"]
    if op is None:
        lines.append("Operation:  none")
    else:
        lines.append(f"Operation:  {op['action']} (request {op['requestId']})")
        lines.append(f"Phase:      {op['phase']}{' (uncertain)' if op['outcome'] else ''}")
        lines.append(f"Message:    {op['message']}")
        lines.append(f"Restarts:   {op['rebootsUsed']} of {op['rebootBudget']} used")
        lines.append(f"Accepted:   {op['acceptedAt']}   updated {op['updatedAt']}")
        for step in op["steps"]:
            lines.append(
                f"  step {step['name']}: {step['outcome']} "
                f"({step['startedAt']} → {step['finishedAt'] or '…'}) {step['detail']}".rstrip()
            )
    if doc["block"]:
        lines.append(f"STOPPED:    {doc['block']['message']}")
    lines.append(f"Report:     last written {doc['lastReportAt'] or 'never'}")
    lines.append(f"Next:       {doc['next']}")
    return "\n".join(lines)
