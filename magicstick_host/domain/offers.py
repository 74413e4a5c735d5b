"""Which actions the host offers the dashboard right now (the report's `actions`). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.operations.registry import OPERATIONS


def available_actions(
    ev: Evidence, capabilities: Mapping[str, Any], *, operation_active: bool
) -> list[str]:
    # one operation at a time, and never on top of someone else's pending shutdown
    if operation_active or ev.services.shutdown_scheduled is not None:
        return []
    # every request is checked against the boot ID; without one nothing can be approved
    if ev.boot_id is None:
        return []
    return [action for action, kind in OPERATIONS.items() if kind.offered(ev, capabilities)]
