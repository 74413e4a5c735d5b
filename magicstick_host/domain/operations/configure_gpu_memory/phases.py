"""configure-gpu-memory, stage by stage (operations.md). Pure decisions.

Two settings, each active only after a restart, at most two restarts in all:
1. the firmware carve-out (uma/carveout): write → restart → verify (verify.py) that it is active
   and nothing else about the host changed;
2. the TTM limit, authorised by the *actual* post-boot MemTotal: the memory playbook writes the
   managed modprobe file and the initramfs → restart → verify the exact limit is active.
No automatic retry, no rollback, no live TTM write, no amdgpu.gttsize.
"""

from __future__ import annotations

from magicstick_host.domain.decisions import Decision, RunStep, SetPhase, Situation
from magicstick_host.domain.evidence import NVIDIA_VENDOR, Evidence, PciDevice
from magicstick_host.domain.operations.configure_gpu_memory.data import (
    DisplayDevice,
    data_of,
    display_devices,
)
from magicstick_host.domain.operations.configure_gpu_memory.declared import (
    WRITE_CARVEOUT,
    WRITE_TTM,
)
from magicstick_host.domain.operations.shutdown_steps import shutdown_step, waiting_for_new_boot
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.state import Operation
from magicstick_host.lite_dataclasses import replace

_REQUIRED_DRIVER = {"strix": "amdgpu", NVIDIA_VENDOR: "nvidia"}


def describe(devices: list[DisplayDevice]) -> str:
    return ", ".join(
        f"{d.pci_id} at {d.address} ({d.driver or 'unbound'})" for d in devices
    ) or "no display devices"


def binding_problems(ev: Evidence) -> tuple[str | None, str | None]:
    """(wrong, waiting) for the driver bindings the capability requires: the Strix Halo bound
    to amdgpu and every other display GPU an NVIDIA GPU bound to nvidia. `waiting` names a GPU
    that is not bound yet; `wrong` one bound to another driver, or another kind of GPU."""
    waiting: str | None = None
    for dev in sorted(ev.pci.devices, key=lambda d: d.address):
        name = f"{dev.pci_id} at {dev.address}"
        wanted = _REQUIRED_DRIVER.get("strix" if dev.is_strix_halo else dev.vendor)
        if wanted is None:
            return f"the display GPU {name} is neither the Strix Halo nor an NVIDIA GPU", None
        if dev.driver is None:
            waiting = waiting or f"the GPU {name} is not bound to {wanted} yet"
        elif dev.driver != wanted:
            return f"the GPU {name} is bound to {dev.driver}, not {wanted}", None
    return None, waiting


def strix(ev: Evidence) -> PciDevice | None:
    devices = ev.pci.strix_halo
    return devices[0] if len(devices) == 1 else None


def pending_note(op: Operation) -> str:
    """A firmware write that happened is never silently left behind."""
    data = data_of(op)
    if data.carveout_written and data.stage == "carveout":
        return (
            f" The firmware memory choice {data.carveout_index} is pending and will take "
            "effect at the next restart."
        )
    return ""


def written_note(op: Operation) -> str:
    """After a boot nobody can attribute: what was written before it, for the administrator."""
    data = data_of(op)
    if data.carveout_written and data.stage == "carveout":
        return (
            f" The firmware memory choice {data.carveout_index} was written before this "
            "boot; `magicstick-host inspect` shows whether it is active."
        )
    if data.ttm_written:
        return (
            f" The dynamic limit {data.dynamic_limit_mi} MiB was written before this boot; "
            "`magicstick-host inspect` shows whether it is active."
        )
    return ""


def accepted(op: Operation, now: Situation) -> Decision:
    return SetPhase(Phase.PREPARING, "Preparing the GPU memory change.")


def preparing(op: Operation, now: Situation) -> Decision:
    return _carveout_stage(op, now) if data_of(op).stage == "carveout" else _ttm_stage(op, now)


def reboot_scheduled(op: Operation, now: Situation) -> Decision:
    still = waiting_for_new_boot(op, now.ev, now.boottime, now.limits, pending_note(op))
    return still if still is not None else SetPhase(Phase.VERIFYING, "Verifying after restart.")


def bindings_changed(ev: Evidence) -> SetPhase | None:
    """Before a write: the bindings must still be what the capability was approved on."""
    wrong, waiting = binding_problems(ev)
    problem = wrong or waiting
    if problem is None:
        return None
    return SetPhase(
        Phase.FAILED,
        f"The GPU driver bindings changed since the request was reviewed: {problem} "
        f"({describe(display_devices(ev))}); nothing was written.",
    )


def _carveout_stage(op: Operation, now: Situation) -> Decision:
    ev, data = now.ev, data_of(op)
    if data.carveout_written:
        return shutdown_step(
            "reboot",
            now.limits,
            then=Phase.REBOOT_SCHEDULED,
            why=f"The firmware memory choice {data.carveout_index} takes effect at restart. ",
        )
    changed = bindings_changed(ev)
    if changed is not None:
        return changed
    device = strix(ev)
    uma = device.uma if device is not None else None
    if device is None or uma is None or device.address != data.pci_address:
        return SetPhase(
            Phase.FAILED,
            "The Strix Halo GPU or its firmware memory control changed "
            "since the request was reviewed; nothing was written.",
        )
    # the firmware's choices by index and size; a label is text, and its form may change
    options = sorted((o.index, o.size_mi) for o in (uma.options or ()))
    reviewed = sorted((o.index, o.size_mi) for o in data.options or ())
    if options != reviewed or uma.selected_index != data.from_carveout_index:
        return SetPhase(
            Phase.FAILED,
            f"The firmware memory options or choice changed since review (expected choice "
            f"{data.from_carveout_index}, found {uma.selected_index}); nothing was written.",
        )
    return RunStep(
        step=WRITE_CARVEOUT,
        inputs={"pciAddress": data.pci_address, "index": data.carveout_index},
        phase_on_done=Phase.PREPARING,
        message_on_done=f"The firmware memory choice {data.carveout_index} is selected for the "
        "next boot.",
        message_on_failure="Writing the firmware memory choice failed; nothing else was done.",
        data_on_done=replace(data, carveout_written=True),
    )


def _ttm_stage(op: Operation, now: Situation) -> Decision:
    ev, data, limits = now.ev, data_of(op), now.limits
    limit = data.dynamic_limit_mi
    if limit is None:  # only a migrated operation can lack it, and none continues to here
        return SetPhase(Phase.FAILED, "The dynamic limit was not recorded; nothing was written.")
    if data.ttm_written:
        return shutdown_step(
            "reboot",
            now.limits,
            then=Phase.REBOOT_SCHEDULED,
            why=f"The dynamic GPU memory limit {limit} MiB takes effect at restart. ",
        )
    changed = bindings_changed(ev)
    if changed is not None:
        return changed
    mem_total = ev.memory.mem_total_mi
    if mem_total is None or limit + limits.system_reserve_mi > mem_total:
        return SetPhase(
            Phase.FAILED,
            f"The dynamic limit {limit} MiB would leave less than {limits.system_reserve_mi} MiB "
            f"of the {mem_total} MiB Linux now has; nothing was written.",
        )
    if ev.ttm.active_limit_mi == limit:
        return SetPhase(Phase.SUCCEEDED, f"The dynamic GPU memory limit is {limit} MiB as chosen.")
    return RunStep(
        step=WRITE_TTM,
        inputs={
            "dynamicLimitMi": limit,
            "runningKernel": ev.kernel.release,
            "memTotalMi": mem_total,
        },
        phase_on_done=Phase.PREPARING,
        message_on_done=f"The dynamic GPU memory limit {limit} MiB is written for the next boot.",
        message_on_failure="Writing the dynamic GPU memory limit failed; nothing was retried.",
        data_on_done=replace(data, ttm_written=True),
    )
