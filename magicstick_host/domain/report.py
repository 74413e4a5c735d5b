"""The Node report annotation payload (contract.md, "The host report")."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from magicstick_host.domain.canonical import sha256_hex
from magicstick_host.domain.convergence.run import report_section
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.state import Block, State
from magicstick_host.domain.text import clip_message
from magicstick_host.domain.times import rfc3339

if TYPE_CHECKING:
    from typing import Any

REPORT_ANNOTATION = "appliance.magicstick.dev/host-management"
REPORT_SCHEMA_VERSION = 1


def operation_summary(state: State) -> dict[str, Any]:
    if state.block is not None:
        return {
            "requestId": state.operation.request_id if state.operation else "",
            "action": state.operation.action if state.operation else "",
            "phase": str(state.operation.phase) if state.operation else str(Phase.INTERRUPTED),
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
        "phase": str(op.phase),
        "message": op.message,
        "updatedAt": op.updated_at,
    }


def unavailable_section(kind: str, node_uid: str, message: str) -> dict[str, Any]:
    """A capability this worker cannot offer: the dashboard shows `message` and no action."""
    base: dict[str, Any] = {"supported": False, "message": clip_message(message)}
    if kind == "modelCache":
        base.update(
            blocked=False, reclaimableBytes=0, caches=[], totalBytes=0, freeBytes=0
        )
    else:
        base.update(interfaces=[])
    base["id"] = sha256_hex({"kind": f"{kind}-unavailable/1", "node": node_uid})
    return base


NOT_YET = {
    "modelCache": "Model cache cleanup is not available from this host worker version.",
}
# the tick always puts the network section into the inspection (network/view.py)
NETWORK_UNREAD = "The network of this host was not inspected by this tick."


def blocked_view(section: dict[str, Any], block: Block) -> dict[str, Any]:
    """A stopped worker shows itself through what the dashboard reads (contract.md): the
    capability is withdrawn with the block's message, so the UI offers nothing to reject."""
    message = clip_message(f"The host worker is stopped: {block.message}")
    withdrawn = {**section, "message": message}
    if "state" in section:  # the plan: blocked, and its experiment withdrawn too
        withdrawn["state"] = "blocked"
        withdrawn.pop("experiment", None)
    else:
        withdrawn["supported"] = False
    return withdrawn


def build_report(
    inspection: dict[str, Any], *, node_uid: str, state: State, observed_at: datetime
) -> dict[str, Any]:
    """Everything the dashboard needs, nothing it must not see (no paths, no evidence dump)."""
    ev = inspection["evidence"]
    sections: dict[str, dict[str, Any]] = {
        "plan": inspection["plan"],
        "gpuMemory": inspection["gpuMemory"],
        "network": inspection.get("network")
        or unavailable_section("network", node_uid, NETWORK_UNREAD),
        **{
            kind: inspection.get(kind) or unavailable_section(kind, node_uid, message)
            for kind, message in NOT_YET.items()
        },
    }
    block = state.block
    if block is not None:
        sections = {kind: blocked_view(section, block) for kind, section in sections.items()}
    report: dict[str, Any] = {
        "schemaVersion": REPORT_SCHEMA_VERSION,
        "observedAt": rfc3339(observed_at),
        "nodeUid": node_uid,
        "bootId": ev["bootId"],
        "kernel": ev["kernel"]["release"],
        **sections,
        # health, not a capability: shown as it is also while the worker is stopped
        "nvidia": inspection["nvidia"],
        "actions": [] if block is not None else inspection["actions"],
        "operation": operation_summary(state),
    }
    if state.convergence is not None:
        # optional (contract.md): the last host convergence run, shown also while stopped
        report["convergence"] = report_section(state.convergence)
    return report


def report_content_digest_input(report: dict[str, Any]) -> dict[str, Any]:
    """The report without its timestamp: what "the content changed" means for throttling.
    The free disk space moves on every tick of a live host: it is refreshed with the minute's
    write, and is no change of content by itself."""
    content = {k: v for k, v in report.items() if k != "observedAt"}
    if isinstance(content.get("modelCache"), dict):
        content["modelCache"] = {k: v for k, v in content["modelCache"].items()
                                 if k != "freeBytes"}
    return content
