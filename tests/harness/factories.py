"""Hand-built local operations for the pure decision tests."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from magicstick_host.domain.operations.registry import data_type
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.records import record_from_json
from magicstick_host.domain.state import Operation


def operation(action: str, phase: str, *, boot_id: str, **changes: Any) -> Operation:
    """An operation accepted at boot `boot_id`, in `phase` since CLOCK_BOOTTIME 100 s.

    `data` may be given as the JSON state.json holds: it becomes the action's record."""
    if isinstance(changes.get("data"), dict):
        changes["data"] = record_from_json(data_type(action), changes["data"])
    base = Operation(
        request_uid="uid",
        request_id="a" * 32,
        action=action,
        namespace="ai-system",
        name="host-x",
        request_digest="0" * 64,
        plan_id="",
        accepted_boot_id=boot_id,
        accepted_at="2026-11-30T12:00:00Z",
        phase=Phase(phase),
        message="m",
        updated_at="2026-11-30T12:00:00Z",
        phase_boot_id=boot_id,
        phase_since_boottime=100.0,
        reboot_budget=1,
    )
    return replace(base, **changes)
