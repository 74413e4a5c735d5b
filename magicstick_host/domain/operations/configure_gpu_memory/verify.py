"""configure-gpu-memory after each restart: the setting is active and nothing else about the
host changed: the display hardware first, then the driver bindings (an unchanged but not yet
bound GPU gets up to 600 s to bind; a different GPU or a wrong driver stops)."""

from __future__ import annotations

from magicstick_host.domain.decisions import Decision, SetPhase, Situation, Wait
from magicstick_host.domain.operations.configure_gpu_memory.data import data_of, memory_identity
from magicstick_host.domain.operations.configure_gpu_memory.phases import (
    binding_problems,
    describe,
    strix,
)
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.state import Operation
from magicstick_host.lite_dataclasses import replace


def verifying(op: Operation, now: Situation) -> Decision:
    ev, data, limits = now.ev, data_of(op), now.limits
    expected = data.identity
    found = memory_identity(ev)
    if expected is not None:
        # the hardware first: a different GPU is never "waiting for its driver"
        if expected.fingerprint != found.fingerprint:
            return SetPhase(
                Phase.FAILED,
                f"After the restart the display hardware is not the one the request was "
                f"approved for: found {describe(found.devices)} (before: "
                f"{describe(expected.devices)}). Nothing was written and the computer is not "
                "restarted again.",
            )
        for key in ("kernel", "os"):
            if getattr(expected, key) != getattr(found, key):
                return SetPhase(
                    Phase.FAILED,
                    f"After the restart the host's {key} changed: expected "
                    f"{getattr(expected, key)}, found {getattr(found, key)}. Nothing was "
                    "repeated.",
                )
    wrong, waiting = binding_problems(ev)
    if wrong is not None:
        return SetPhase(
            Phase.FAILED,
            f"After the restart {wrong} ({describe(found.devices)}); GPU memory control "
            "needs the Strix Halo on amdgpu and NVIDIA GPUs on nvidia. Nothing was written and "
            "the computer is not restarted again.",
        )
    if waiting is not None:
        if now.boottime - op.phase_since_boottime <= limits.companion_driver_deadline_s:
            return Wait(f"Verifying: waiting for the companion driver ({waiting}).")
        return SetPhase(
            Phase.FAILED,
            f"After the restart {waiting} within {int(limits.companion_driver_deadline_s)} s. "
            "Nothing was written and the computer is not restarted again.",
        )
    if ev.ttm.overrides:
        return SetPhase(
            Phase.FAILED,
            f"A competing memory setting appeared: {ev.ttm.overrides[0].text} "
            f"in {ev.ttm.overrides[0].source}. Nothing was repeated.",
        )
    device = strix(ev)
    if data.stage == "carveout":
        active = (
            device.vram_total_bytes // (1024 * 1024) if device and device.vram_total_bytes else None
        )
        if active != data.new_carveout_mi:
            return SetPhase(
                Phase.FAILED,
                f"The firmware memory reservation is {active} MiB after the "
                f"restart, expected {data.new_carveout_mi} MiB. Nothing was repeated.",
            )
        return SetPhase(
            Phase.PREPARING,
            f"The firmware reservation of {active} MiB is active.",
            data=replace(data, stage="ttm"),
        )
    if ev.ttm.active_limit_mi != data.dynamic_limit_mi:
        return SetPhase(
            Phase.FAILED,
            f"The dynamic GPU memory limit is {ev.ttm.active_limit_mi} MiB "
            f"after the restart, expected {data.dynamic_limit_mi} MiB.",
        )
    return SetPhase(Phase.SUCCEEDED, "The GPU memory settings are active as chosen.")
