"""The Node report annotation payload (contract.md, "The host report")."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from magicstick_host.domain.inspection import rfc3339
from magicstick_host.domain.state import State

REPORT_ANNOTATION = "appliance.magicstick.dev/host-management"
REPORT_SCHEMA_VERSION = 1


def operation_summary(state: State) -> dict[str, Any]:
    if state.block is not None:
        return {
            "requestId": state.operation.request_id if state.operation else "",
            "action": state.operation.action if state.operation else "",
            "phase": state.operation.phase if state.operation else "Interrupted",
            "message": state.block.message,
            "updatedAt": state.block.since,
            "blocked": state.block.code,
        }
    op = state.operation
    if op is None:
        return {}
    return {
        "requestId": op.request_id,
        "action": op.action,
        "phase": op.phase,
        "message": op.message,
        "updatedAt": op.updated_at,
    }


def build_report(
    inspection: dict[str, Any], *, node_uid: str, state: State, observed_at: datetime
) -> dict[str, Any]:
    """Everything the dashboard needs, nothing it must not see (no paths, no evidence dump)."""
    ev = inspection["evidence"]
    blocked = state.block is not None
    return {
        "schemaVersion": REPORT_SCHEMA_VERSION,
        "observedAt": rfc3339(observed_at),
        "nodeUid": node_uid,
        "bootId": ev["bootId"],
        "kernel": ev["kernel"]["release"],
        "plan": inspection["plan"],
        "actions": [] if blocked else inspection["actions"],
        "gpuMemory": inspection["gpuMemory"],
        "operation": operation_summary(state),
    }


def report_content_digest_input(report: dict[str, Any]) -> dict[str, Any]:
    """The report without its timestamp: what "the content changed" means for throttling."""
    return {k: v for k, v in report.items() if k != "observedAt"}
