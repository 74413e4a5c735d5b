"""The console view of the local state (`magicstick-host status`). Pure."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from magicstick_host.domain.convergence.run import render_convergence
from magicstick_host.domain.phase import SHUTDOWN_PHASES, Phase
from magicstick_host.domain.state import State
from magicstick_host.domain.times import rfc3339

if TYPE_CHECKING:
    from typing import Any

STATUS_SCHEMA_VERSION = 1


def recover_command(node_name: str) -> str:
    return f"magicstick-host recover --confirm {node_name}"


def condition_advice(condition: dict[str, str], node_name: str) -> str:
    """The command that clears one blocking condition (state_paths.PathProblem.fix)."""
    if condition["fix"]:
        return f"run `{condition['fix']}`"
    return (
        f"run `{recover_command(node_name)}` at the console "
        f"(it moves the {condition['role']} aside)"
    )


def next_step_advice(state: State, node_name: str, *, legacy: bool = False) -> str:
    if state.block is not None:
        return (
            "The worker is stopped. Review the evidence, then run "
            f"`{recover_command(node_name)}` at the console."
        )
    op = state.operation
    if legacy:
        return (
            "This is the previous worker version's state; the next tick migrates it (the "
            "original stays beside it as state.json.legacy-*) and journals the migration."
        )
    if op is None:
        return "Nothing to do: requests come from the appliance dashboard."
    if op.phase in SHUTDOWN_PHASES:
        return "The computer shuts down shortly; nothing to do. Save your work."
    if not op.terminal:
        return "The operation is running; the worker advances it every 15 seconds."
    if op.phase in (Phase.SUCCEEDED, Phase.PREPARED_UNVERIFIED):
        return "Nothing to do."
    return (
        "Read the message. Nothing is retried automatically; a new confirmed request from the "
        "dashboard is the only way forward."
    )


def _advice(
    st: State, node_name: str, state_error: str, conditions: list[dict[str, str]], legacy: bool
) -> str:
    if conditions:
        fixes = "; ".join(
            f"{c['path']}: {condition_advice(c, node_name)}" for c in conditions
        )
        return f"The tick is blocked until this is fixed: {fixes}."
    if state_error:
        return (
            f"The state file cannot be used; run `{recover_command(node_name)}` at the console: "
            "it moves the file aside (kept for inspection) and clears the block."
        )
    return next_step_advice(st, node_name, legacy=legacy)


def build_status(
    state: State | None,
    *,
    node_name: str,
    observed_at: datetime,
    state_error: str = "",
    conditions: list[dict[str, str]] | None = None,
    legacy: bool = False,
    nvidia: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`nvidia`: the NVIDIA health section (domain/nvidia_health.py), None when not read."""
    st = state or State()
    op = st.operation
    found = [
        {
            "path": c["path"],
            "role": c["role"],
            "problem": c["problem"],
            "message": c["what"],
            "advice": condition_advice(c, node_name),
        }
        for c in conditions or []
    ]
    operation: dict[str, Any] | None = None
    if op is not None:
        operation = {
            "requestId": op.request_id,
            "requestUid": op.request_uid,
            "action": op.action,
            "phase": str(op.phase),
            "message": op.message,
            "acceptedAt": op.accepted_at,
            "updatedAt": op.updated_at,
            "rebootsUsed": op.reboots_used,
            "rebootBudget": op.reboot_budget,
            "outcome": op.outcome,
            # the cluster refused to take this status (403, 422: e.g. an older CRD)
            "statusRefused": op.status_refused,
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
        "conditions": found,
        "legacy": legacy,
        "operation": operation,
        "block": st.block.to_json() if st.block else None,
        "lastReportAt": st.last_report_at or None,
        "processedRequests": len(st.processed),
        "convergence": st.convergence.to_json() if st.convergence else None,
        "nvidia": nvidia,
        "next": _advice(st, node_name, state_error, conditions or [], legacy),
    }


def render_status(doc: dict[str, Any]) -> str:
    lines = [f"Node:       {doc['node']}"]
    for condition in doc["conditions"]:
        lines.append(f"BLOCKED:    {condition['path']}: {condition['message']}")
        lines.append(f"            fix: {condition['advice']}")
    if doc["stateError"]:
        lines.append(f"State:      UNREADABLE: {doc['stateError']}")
    if doc["legacy"]:
        lines.append("State:      from the previous worker version (migrated by the next tick)")
    op = doc["operation"]
    if op is None:
        lines.append("Operation:  none")
    else:
        lines.append(f"Operation:  {op['action']} (request {op['requestId']})")
        lines.append(f"Phase:      {op['phase']}{' (uncertain)' if op['outcome'] else ''}")
        lines.append(f"Message:    {op['message']}")
        lines.append(f"Restarts:   {op['rebootsUsed']} of {op['rebootBudget']} used")
        lines.append(f"Accepted:   {op['acceptedAt']}   updated {op['updatedAt']}")
        if op["statusRefused"]:
            lines.append(
                f"Status:     NOT IN KUBERNETES: the server refused it ({op['statusRefused']}); "
                "the operation and the Node report go on, the status is sent again when it "
                "changes"
            )
        for step in op["steps"]:
            lines.append(
                f"  step {step['name']}: {step['outcome']} "
                f"({step['startedAt']} → {step['finishedAt'] or '…'}) {step['detail']}".rstrip()
            )
    if doc["block"]:
        lines.append(f"STOPPED:    {doc['block']['message']}")
    lines.append(f"Report:     last written {doc['lastReportAt'] or 'never'}")
    lines += render_convergence(doc.get("convergence"))
    nvidia = doc.get("nvidia")
    if nvidia and nvidia["state"] != "absent":
        flag = "" if nvidia["state"] == "healthy" else f"{nvidia['state'].upper()}: "
        lines.append(f"NVIDIA:     {flag}{nvidia['message']}")
    lines.append(f"Next:       {doc['next']}")
    return "\n".join(lines)
