"""configure-gpu-memory at intake: the selection is checked against the capability this host
computes now (operations.md, "configure-gpu-memory", selection rules)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.gpu_memory.capability import (
    GPU_MEMORY_CAPABILITY,
    GpuMemoryCapability,
    validate_memory_selection,
)
from magicstick_host.domain.limits import Limits
from magicstick_host.domain.request import HostFacts, plan_id_problem

if TYPE_CHECKING:
    from typing import Any

REQUEST_FIELDS = frozenset({"gpuMemory"})


def check_request(spec: dict[str, Any], host: HostFacts, limits: Limits) -> str | None:
    problem = plan_id_problem(spec)
    if problem is not None:
        return problem
    cap: dict[str, Any] = host.capabilities.get("gpuMemory") or {}
    if not spec["allowExperimental"] or spec["experimentMode"]:
        return "configure-gpu-memory requires allowExperimental and no experiment mode."
    if spec["planId"] != cap.get("id"):
        return "The GPU memory settings changed since they were reviewed (the id differs)."
    if not cap.get("supported"):
        return f"GPU memory control is not available: {cap.get('message')}"
    selection = spec.get("gpuMemory")
    if not isinstance(selection, dict) or set(selection) != {"carveoutIndex", "dynamicLimitMi"}:
        return "configure-gpu-memory needs exactly gpuMemory {carveoutIndex, dynamicLimitMi}."
    index, limit = selection["carveoutIndex"], selection["dynamicLimitMi"]
    # bool is an int in Python; the contract wants real integers
    if type(index) is not int or type(limit) is not int:
        return "gpuMemory carveoutIndex and dynamicLimitMi must be integers."
    capability = host.capabilities.get(GPU_MEMORY_CAPABILITY)
    if not isinstance(capability, GpuMemoryCapability):
        return "GPU memory control is not available: the capability could not be computed."
    result = validate_memory_selection(capability, index, limit, limits)
    return None if result.ok else result.message
