"""The read-only preflight: evidence plus plan, as one versioned document (inspect --json)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.fingerprint import hardware_fingerprint
from magicstick_host.domain.gpu_memory.capability import (
    GPU_MEMORY_CAPABILITY,
    gpu_memory_capability,
)
from magicstick_host.domain.limits import Limits
from magicstick_host.domain.nvidia_health import nvidia_health
from magicstick_host.domain.offers import available_actions
from magicstick_host.domain.plan.planner import plan_preparation
from magicstick_host.domain.profiles import Profile
from magicstick_host.domain.readiness import amd_host_driver_ready
from magicstick_host.domain.serialize import evidence_to_json
from magicstick_host.domain.times import rfc3339

if TYPE_CHECKING:
    from typing import Any

INSPECT_SCHEMA_VERSION = 1


def host_capabilities(
    ev: Evidence, profiles: Sequence[Profile], limits: Limits
) -> dict[str, Any]:
    """What the host can do, by report section ("plan", "gpuMemory"), plus the objects intake
    checks requests against (domain/request.py, HostFacts.capabilities)."""
    memory = gpu_memory_capability(ev, limits)
    return {
        "plan": plan_preparation(ev, profiles).to_json(),
        "gpuMemory": memory.to_json(),
        GPU_MEMORY_CAPABILITY: memory,
    }


def build_inspection(
    ev: Evidence,
    profiles: Sequence[Profile],
    limits: Limits,
    *,
    observed_at: datetime,
    root: str,
    operation_active: bool = False,
    capabilities: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    caps = capabilities if capabilities is not None else host_capabilities(ev, profiles, limits)
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
        "plan": caps["plan"],
        "gpuMemory": caps["gpuMemory"],
        "nvidia": nvidia_health(ev),
        "actions": available_actions(ev, caps, operation_active=operation_active),
        "unknowns": [{"field": u.field, "reason": u.reason} for u in ev.unknowns],
        # the tick's network section (it needs the Node and the state directory)
        **({"network": caps["network"]} if "network" in caps else {}),
    }
