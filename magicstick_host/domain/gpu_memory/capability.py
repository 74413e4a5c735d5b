"""The Strix Halo shared-memory capability (`gpuMemory`) and its selection rules.

operations.md, "configure-gpu-memory". Every support condition is checked here, from evidence
only; the first one that fails becomes the message. Values that could be read are published
even when the capability is unsupported, so the dashboard can show the host as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.canonical import sha256_hex
from magicstick_host.domain.evidence import CarveoutOption, Evidence
from magicstick_host.domain.fingerprint import host_identity
from magicstick_host.domain.gpu_memory.support import SupportFacts, support_facts
from magicstick_host.domain.limits import Limits
from magicstick_host.domain.text import clip_message
from magicstick_host.lite_dataclasses import dataclass, replace

if TYPE_CHECKING:
    from typing import Any

_KIND = "gpu-memory-capability/1"
# the key of the capability object itself among a tick's capabilities (domain/request.py,
# HostFacts): configure-gpu-memory's intake checks a selection against it
GPU_MEMORY_CAPABILITY = "gpuMemoryCapability"


@dataclass(frozen=True)
class MemorySuggestion:
    """A corrective selection: the largest limit the current reservation allows."""

    carveout_index: int
    dynamic_limit_mi: int

    def to_json(self) -> dict[str, Any]:
        return {"carveoutIndex": self.carveout_index, "dynamicLimitMi": self.dynamic_limit_mi}


@dataclass(frozen=True)
class GpuMemoryCapability:
    supported: bool
    message: str
    pci_address: str | None
    options: tuple[CarveoutOption, ...]
    current_carveout_index: int | None
    current_carveout_mi: int | None
    current_dynamic_limit_mi: int | None
    system_memory_mi: int | None
    system_reserve_mi: int
    step_mi: int
    min_dynamic_limit_mi: int
    id: str
    pending_carveout_index: int | None = None
    suggestion: MemorySuggestion | None = None

    def content(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "supported": self.supported,
            "message": self.message,
            "pciAddress": self.pci_address,
            "options": [
                {"index": o.index, "label": o.label, "sizeMi": o.size_mi} for o in self.options
            ],
            "currentCarveoutIndex": self.current_carveout_index,
            "currentCarveoutMi": self.current_carveout_mi,
            "currentDynamicLimitMi": self.current_dynamic_limit_mi,
            "systemMemoryMi": self.system_memory_mi,
            "systemReserveMi": self.system_reserve_mi,
            "stepMi": self.step_mi,
            "minDynamicLimitMi": self.min_dynamic_limit_mi,
        }
        if self.pending_carveout_index is not None:
            doc["pendingCarveoutIndex"] = self.pending_carveout_index
        if self.suggestion is not None:
            doc["suggestion"] = self.suggestion.to_json()
        return doc

    def to_json(self) -> dict[str, Any]:
        return {**self.content(), "id": self.id}

    def option(self, index: int) -> CarveoutOption | None:
        return next((o for o in self.options if o.index == index), None)


def max_dynamic_limit_mi(projected_memory_mi: int, limits: Limits) -> int:
    """The largest step-aligned limit that leaves the system reserve to Linux."""
    room = projected_memory_mi - limits.system_reserve_mi
    return (room // limits.step_mi) * limits.step_mi


def _suggestion(facts: SupportFacts, limits: Limits) -> tuple[MemorySuggestion | None, str]:
    current, memory, index = facts.current_limit_mi, facts.system_memory_mi, facts.current_index
    if current is None or memory is None or index is None:
        return None, ""
    allowed = max_dynamic_limit_mi(memory, limits)
    if current <= allowed:
        return None, ""
    if allowed < limits.min_dynamic_limit_mi:
        return None, (
            f" The active limit of {current} MiB exceeds what this reservation allows, and no "
            "limit fits with it; choose a smaller firmware reservation."
        )
    return MemorySuggestion(index, allowed), (
        f" The active limit of {current} MiB exceeds the {allowed} MiB this reservation allows; "
        f"a confirmed request for {allowed} MiB is suggested."
    )


def gpu_memory_capability(ev: Evidence, limits: Limits) -> GpuMemoryCapability:
    facts = support_facts(ev)
    supported = facts.problem is None
    suggestion: MemorySuggestion | None = None
    if supported:
        suggestion, extra = _suggestion(facts, limits)
        message = (
            f"The firmware reservation and the dynamic GPU memory limit of the Strix Halo GPU "
            f"at {facts.pci_address} can be configured.{extra}"
        )
    else:
        message = f"GPU memory cannot be configured: {facts.problem}."
    cap = GpuMemoryCapability(
        supported=supported,
        message=clip_message(message),
        pci_address=facts.pci_address,
        options=facts.options,
        current_carveout_index=facts.current_index,
        current_carveout_mi=facts.current_carveout_mi,
        current_dynamic_limit_mi=facts.current_limit_mi,
        system_memory_mi=facts.system_memory_mi,
        system_reserve_mi=limits.system_reserve_mi,
        step_mi=limits.step_mi,
        min_dynamic_limit_mi=limits.min_dynamic_limit_mi,
        id="",
        pending_carveout_index=facts.pending_index,
        suggestion=suggestion,
    )
    cap_id = sha256_hex({"kind": _KIND, "capability": cap.content(), "host": host_identity(ev)})
    return replace(cap, id=cap_id)


@dataclass(frozen=True)
class SelectionResult:
    ok: bool
    message: str
    carveout_changes: bool = False
    limit_changes: bool = False
    new_carveout_mi: int | None = None
    projected_memory_mi: int | None = None
    max_dynamic_limit_mi: int | None = None


def _reject(message: str) -> SelectionResult:
    return SelectionResult(False, clip_message(message))


def validate_memory_selection(
    cap: GpuMemoryCapability, carveout_index: int, dynamic_limit_mi: int, limits: Limits
) -> SelectionResult:
    if not cap.supported:
        return _reject(cap.message)
    memory, carveout, limit = (
        cap.system_memory_mi,
        cap.current_carveout_mi,
        cap.current_dynamic_limit_mi,
    )
    if memory is None or carveout is None or limit is None or cap.current_carveout_index is None:
        return _reject("GPU memory cannot be configured: the current values are unknown.")
    option = cap.option(carveout_index)
    if option is None:
        listed = ", ".join(str(o.index) for o in cap.options)
        return _reject(
            f"Firmware reservation option {carveout_index} is not offered (options: {listed})."
        )
    step, minimum = limits.step_mi, limits.min_dynamic_limit_mi
    if dynamic_limit_mi % step != 0:
        return _reject(f"The dynamic limit {dynamic_limit_mi} MiB is not a multiple of {step} MiB.")
    if dynamic_limit_mi < minimum:
        return _reject(f"The dynamic limit {dynamic_limit_mi} MiB is below {minimum} MiB.")
    # the carve-out comes out of RAM: a bigger reservation leaves less for Linux
    projected = memory + carveout - option.size_mi
    allowed = projected - limits.system_reserve_mi
    if dynamic_limit_mi > allowed:
        return _reject(
            f"The dynamic limit {dynamic_limit_mi} MiB is above the {allowed} MiB allowed with "
            f"option {carveout_index} ({projected} MiB of RAM for Linux minus "
            f"{limits.system_reserve_mi} MiB kept for the system)."
        )
    carveout_changes = carveout_index != cap.current_carveout_index
    limit_changes = dynamic_limit_mi != limit
    if not carveout_changes and not limit_changes:
        return _reject("This selection is already active; nothing would change.")
    reboots = 2 if carveout_changes and limit_changes else 1
    return SelectionResult(
        True,
        f"Option {carveout_index} ({option.size_mi} MiB reserved) with a dynamic limit of "
        f"{dynamic_limit_mi} MiB is valid; applying it takes {reboots} restart(s).",
        carveout_changes=carveout_changes,
        limit_changes=limit_changes,
        new_carveout_mi=option.size_mi,
        projected_memory_mi=projected,
        max_dynamic_limit_mi=(allowed // step) * step,
    )
