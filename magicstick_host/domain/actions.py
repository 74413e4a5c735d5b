"""Which actions the host offers the dashboard right now (the report's `actions`)."""

from __future__ import annotations

from typing import Any

from magicstick_host.domain.evidence import Evidence

HANDLED_ACTIONS = ("prepare-gpu", "configure-gpu-memory", "reboot", "poweroff")


def available_actions(
    ev: Evidence, plan: dict[str, Any], gpu_memory: dict[str, Any], *, operation_active: bool
) -> list[str]:
    # one operation at a time, and never on top of someone else's pending shutdown
    if operation_active or ev.services.shutdown_scheduled is not None:
        return []
    # a power request is checked against the boot ID; without one nothing can be approved
    if ev.boot_id is None:
        return []
    actions: list[str] = []
    if plan.get("state") in ("available", "ready") or "experiment" in plan:
        actions.append("prepare-gpu")
    if gpu_memory.get("supported") is True:
        actions.append("configure-gpu-memory")
    actions += ["reboot", "poweroff"]
    return actions
