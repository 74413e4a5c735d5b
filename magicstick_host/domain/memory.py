"""configure-gpu-memory, stage by stage (operations.md). Pure decisions.

Two settings, each active only after a restart, at most two restarts in all:
1. the firmware carve-out (uma/carveout): write → restart → verify it is active and nothing else
   about the host changed: the display hardware first, then the driver bindings (an unchanged
   but not-yet-bound GPU gets up to 600 s to bind; a different GPU or a wrong driver stops);
2. the TTM limit, authorised by the *actual* post-boot MemTotal: the memory playbook writes the
   managed modprobe file and the initramfs → restart → verify the exact limit is active.
No automatic retry, no rollback, no live TTM write, no amdgpu.gttsize.
"""

from __future__ import annotations

from typing import Any

from magicstick_host.domain.decisions import (
    ClassifiedStep,
    Decision,
    RunStep,
    SetPhase,
    Situation,
    Wait,
)
from magicstick_host.domain.evidence import NVIDIA_VENDOR, Evidence, PciDevice
from magicstick_host.domain.fingerprint import hardware_fingerprint
from magicstick_host.domain.intake import Accepted
from magicstick_host.domain.power import classify_shutdown, shutdown_step, waiting_for_new_boot
from magicstick_host.domain.state import Operation

WRITE_CARVEOUT = "write-carveout"
WRITE_TTM = "write-ttm-config"


def display_devices(ev: Evidence) -> list[dict[str, str | None]]:
    """The complete display inventory with its driver bindings, as the messages show it."""
    return [
        {"address": d.address, "pciId": d.pci_id, "driver": d.driver}
        for d in sorted(ev.pci.devices, key=lambda d: d.address)
    ]


def memory_identity(ev: Evidence) -> dict[str, Any]:
    """What must not change across the restarts (the carve-out capacity is excluded)."""
    return {
        "kernel": ev.kernel.release,
        "os": [ev.os.id, ev.os.version_id],
        "fingerprint": hardware_fingerprint(ev),
        "amdDriver": [d.driver for d in ev.pci.strix_halo],
        "devices": display_devices(ev),
    }


def _describe(devices: list[dict[str, Any]]) -> str:
    return ", ".join(
        f"{d['pciId']} at {d['address']} ({d.get('driver') or 'unbound'})" for d in devices
    ) or "no display devices"


_REQUIRED_DRIVER = {"strix": "amdgpu", NVIDIA_VENDOR: "nvidia"}


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


def memory_initial_data(req: Accepted, now: Situation) -> dict[str, Any]:
    cap, selection = now.gpu_memory, req.spec["gpuMemory"]
    index, limit = int(selection["carveoutIndex"]), int(selection["dynamicLimitMi"])
    sizes = {int(o["index"]): int(o["sizeMi"]) for o in cap["options"]}
    carveout_changes = index != cap["currentCarveoutIndex"]
    return {
        "carveoutIndex": index,
        "dynamicLimitMi": limit,
        "pciAddress": cap["pciAddress"],
        "fromCarveoutIndex": cap["currentCarveoutIndex"],
        "options": cap["options"],
        "newCarveoutMi": sizes[index],
        "stage": "carveout" if carveout_changes else "ttm",
        "carveoutWritten": False,
        "ttmWritten": False,
        "identity": memory_identity(now.ev),
    }


def _strix(ev: Evidence) -> PciDevice | None:
    devices = ev.pci.strix_halo
    return devices[0] if len(devices) == 1 else None


def pending_note(op: Operation) -> str:
    """A firmware write that happened is never silently left behind."""
    if op.data.get("carveoutWritten") and op.data.get("stage") == "carveout":
        return (
            f" The firmware memory choice {op.data['carveoutIndex']} is pending and will take "
            "effect at the next restart."
        )
    return ""


def written_note(op: Operation) -> str:
    """After a boot nobody can attribute: what was written before it, for the administrator."""
    if op.data.get("carveoutWritten") and op.data.get("stage") == "carveout":
        return (
            f" The firmware memory choice {op.data['carveoutIndex']} was written before this "
            "boot; `magicstick-host inspect` shows whether it is active."
        )
    if op.data.get("ttmWritten"):
        return (
            f" The dynamic limit {op.data['dynamicLimitMi']} MiB was written before this boot; "
            "`magicstick-host inspect` shows whether it is active."
        )
    return ""


def decide_memory(op: Operation, now: Situation) -> Decision:
    ev, data = now.ev, op.data
    if ev.boot_id is None:
        return Wait("Waiting: this host's boot ID cannot be read right now.")
    step = op.open_step
    if step is not None:
        return _classify(op, now)
    if op.phase == "Accepted":
        return SetPhase("Preparing", "Preparing the GPU memory change.")
    if op.phase == "Preparing":
        return _carveout_stage(op, now) if data["stage"] == "carveout" else _ttm_stage(op, now)
    if op.phase == "RebootScheduled":
        still = waiting_for_new_boot(op, ev, now.boottime, now.limits, pending_note(op))
        return still if still is not None else SetPhase("Verifying", "Verifying after restart.")
    if op.phase == "Verifying":
        return _verify(op, now)
    return Wait(f"Waiting in phase {op.phase}.")


def _carveout_stage(op: Operation, now: Situation) -> Decision:
    ev, data = now.ev, op.data
    if data["carveoutWritten"]:
        return shutdown_step(
            "reboot",
            now.limits,
            why=f"The firmware memory choice {data['carveoutIndex']} takes effect at restart. ",
        )
    changed = _bindings_changed(ev)
    if changed is not None:
        return changed
    device = _strix(ev)
    uma = device.uma if device is not None else None
    if device is None or uma is None or device.address != data["pciAddress"]:
        return SetPhase(
            "Failed",
            "The Strix Halo GPU or its firmware memory control changed "
            "since the request was reviewed; nothing was written.",
        )
    # the firmware's choices by index and size; a label is text, and its form may change
    options = sorted((o.index, o.size_mi) for o in (uma.options or ()))
    reviewed = sorted((int(o["index"]), int(o["sizeMi"])) for o in data["options"])
    if options != reviewed or uma.selected_index != data["fromCarveoutIndex"]:
        return SetPhase(
            "Failed",
            f"The firmware memory options or choice changed since review (expected choice "
            f"{data['fromCarveoutIndex']}, found {uma.selected_index}); nothing was written.",
        )
    return RunStep(
        step=WRITE_CARVEOUT,
        inputs={"pciAddress": data["pciAddress"], "index": data["carveoutIndex"]},
        phase_on_done="Preparing",
        message_on_done=f"The firmware memory choice {data['carveoutIndex']} is selected for the "
        "next boot.",
        message_on_failure="Writing the firmware memory choice failed; nothing else was done.",
        data_on_done={"carveoutWritten": True},
    )


def _ttm_stage(op: Operation, now: Situation) -> Decision:
    ev, data, limits = now.ev, op.data, now.limits
    limit = data["dynamicLimitMi"]
    if data["ttmWritten"]:
        return shutdown_step(
            "reboot",
            now.limits,
            why=f"The dynamic GPU memory limit {limit} MiB takes effect at restart. ",
        )
    changed = _bindings_changed(ev)
    if changed is not None:
        return changed
    mem_total = ev.memory.mem_total_mi
    if mem_total is None or limit + limits.system_reserve_mi > mem_total:
        return SetPhase(
            "Failed",
            f"The dynamic limit {limit} MiB would leave less than {limits.system_reserve_mi} MiB "
            f"of the {mem_total} MiB Linux now has; nothing was written.",
        )
    if ev.ttm.active_limit_mi == limit:
        return SetPhase("Succeeded", f"The dynamic GPU memory limit is {limit} MiB as chosen.")
    return RunStep(
        step=WRITE_TTM,
        inputs={
            "dynamicLimitMi": limit,
            "runningKernel": ev.kernel.release,
            "memTotalMi": mem_total,
        },
        phase_on_done="Preparing",
        message_on_done=f"The dynamic GPU memory limit {limit} MiB is written for the next boot.",
        message_on_failure="Writing the dynamic GPU memory limit failed; nothing was retried.",
        data_on_done={"ttmWritten": True},
    )


def _verify(op: Operation, now: Situation) -> Decision:
    ev, data, limits = now.ev, op.data, now.limits
    # None: recorded by the previous worker version, which kept no identity
    expected: dict[str, Any] | None = data.get("identity")
    found = memory_identity(ev)
    if expected is not None:
        # the hardware first: a different GPU is never "waiting for its driver"
        if expected["fingerprint"] != found["fingerprint"]:
            before = expected.get("devices")
            was = f" (before: {_describe(before)})" if before is not None else ""
            return SetPhase(
                "Failed",
                f"After the restart the display hardware is not the one the request was "
                f"approved for: found {_describe(found['devices'])}{was}. Nothing was written "
                "and the computer is not restarted again.",
            )
        for key in ("kernel", "os"):
            if expected[key] != found[key]:
                return SetPhase(
                    "Failed",
                    f"After the restart the host's {key} changed: expected "
                    f"{expected[key]}, found {found[key]}. Nothing was repeated.",
                )
    wrong, waiting = binding_problems(ev)
    if wrong is not None:
        return SetPhase(
            "Failed",
            f"After the restart {wrong} ({_describe(found['devices'])}); GPU memory control "
            "needs the Strix Halo on amdgpu and NVIDIA GPUs on nvidia. Nothing was written and "
            "the computer is not restarted again.",
        )
    if waiting is not None:
        if now.boottime - op.phase_since_boottime <= limits.companion_driver_deadline_s:
            return Wait(f"Verifying: waiting for the companion driver ({waiting}).")
        return SetPhase(
            "Failed",
            f"After the restart {waiting} within {int(limits.companion_driver_deadline_s)} s. "
            "Nothing was written and the computer is not restarted again.",
        )
    if ev.ttm.overrides:
        return SetPhase(
            "Failed",
            f"A competing memory setting appeared: {ev.ttm.overrides[0].text} "
            f"in {ev.ttm.overrides[0].source}. Nothing was repeated.",
        )
    device = _strix(ev)
    if data["stage"] == "carveout":
        active = (
            device.vram_total_bytes // (1024 * 1024) if device and device.vram_total_bytes else None
        )
        if active != data["newCarveoutMi"]:
            return SetPhase(
                "Failed",
                f"The firmware memory reservation is {active} MiB after the "
                f"restart, expected {data['newCarveoutMi']} MiB. Nothing was repeated.",
            )
        return SetPhase(
            "Preparing",
            f"The firmware reservation of {active} MiB is active.",
            data={"stage": "ttm"},
        )
    if ev.ttm.active_limit_mi != data["dynamicLimitMi"]:
        return SetPhase(
            "Failed",
            f"The dynamic GPU memory limit is {ev.ttm.active_limit_mi} MiB "
            f"after the restart, expected {data['dynamicLimitMi']} MiB.",
        )
    return SetPhase("Succeeded", "The GPU memory settings are active as chosen.")


def _bindings_changed(ev: Evidence) -> SetPhase | None:
    """Before a write: the bindings must still be what the capability was approved on."""
    wrong, waiting = binding_problems(ev)
    problem = wrong or waiting
    if problem is None:
        return None
    return SetPhase(
        "Failed",
        f"The GPU driver bindings changed since the request was reviewed: {problem} "
        f"({_describe(display_devices(ev))}); nothing was written.",
    )


def _classify(op: Operation, now: Situation) -> ClassifiedStep:
    ev, data = now.ev, op.data
    step = op.open_step
    assert step is not None
    if step.name == WRITE_CARVEOUT:
        device = _strix(ev)
        selected = device.uma.selected_index if device and device.uma else None
        if selected == data["carveoutIndex"]:
            return ClassifiedStep(
                "classified-done",
                f"uma/carveout reads {selected}",
                SetPhase(
                    "Preparing",
                    f"The firmware memory choice {selected} is selected.",
                    data={"carveoutWritten": True},
                    outcome="uncertain",
                ),
            )
        return ClassifiedStep(
            "unknown",
            f"uma/carveout reads {selected}",
            SetPhase(
                "Interrupted",
                f"The worker stopped while writing the firmware memory "
                f"choice; uma/carveout reads {selected}. Nothing was repeated.",
                outcome="uncertain",
            ),
        )
    if step.name == WRITE_TTM:
        wanted = data["dynamicLimitMi"] * 256
        if ev.ttm.managed_pages_limit == wanted:
            return ClassifiedStep(
                "classified-done",
                f"the managed modprobe file holds pages_limit={wanted}",
                SetPhase(
                    "Preparing",
                    "The dynamic limit is written for the next boot.",
                    data={"ttmWritten": True},
                    outcome="uncertain",
                ),
            )
        return ClassifiedStep(
            "unknown",
            f"the managed modprobe file holds {ev.ttm.managed_pages_limit}",
            SetPhase(
                "Interrupted",
                "The worker stopped while writing the dynamic GPU memory "
                "limit, and the managed file does not hold it. Nothing was repeated."
                + pending_note(op),
                outcome="uncertain",
            ),
        )
    cls = classify_shutdown(op, ev)
    if cls.then.phase == "Interrupted":
        rebooted = ev.boot_id != step.boot_id
        note = written_note(op) if rebooted else pending_note(op)
        then = SetPhase("Interrupted", cls.then.message + note, outcome="uncertain")
        return ClassifiedStep(cls.outcome, cls.detail, then)
    return cls
