"""The read-only preflight: evidence plus plan, as one versioned document (inspect --json)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from magicstick_host.domain.actions import available_actions
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.fingerprint import hardware_fingerprint
from magicstick_host.domain.gpu_memory import gpu_memory_capability
from magicstick_host.domain.limits import Limits
from magicstick_host.domain.planner import plan_preparation
from magicstick_host.domain.profiles import Profile
from magicstick_host.domain.readiness import amd_host_driver_ready
from magicstick_host.domain.serialize import evidence_to_json

INSPECT_SCHEMA_VERSION = 1


def rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def build_inspection(
    ev: Evidence,
    profiles: Sequence[Profile],
    limits: Limits,
    *,
    observed_at: datetime,
    root: str,
    operation_active: bool = False,
) -> dict[str, Any]:
    plan = plan_preparation(ev, profiles).to_json()
    gpu_memory = gpu_memory_capability(ev, limits).to_json()
    strix = ev.pci.strix_halo
    driver: dict[str, Any] | None = None
    if len(strix) >= 1:
        ready, reason = amd_host_driver_ready(ev, strix[0])
        driver = {"ready": ready, "reason": reason, "pciAddress": strix[0].address}
    return {
        "schemaVersion": INSPECT_SCHEMA_VERSION,
        "kind": "magicstick-host.inspect",
        "observedAt": rfc3339(observed_at),
        "root": root,
        "evidence": evidence_to_json(ev),
        "hardwareFingerprint": hardware_fingerprint(ev),
        "amdDriverReady": driver,
        "plan": plan,
        "gpuMemory": gpu_memory,
        "actions": available_actions(ev, plan, gpu_memory, operation_active=operation_active),
        "unknowns": [{"field": u.field, "reason": u.reason} for u in ev.unknowns],
    }
