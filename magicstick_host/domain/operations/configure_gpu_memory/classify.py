"""configure-gpu-memory's steps without an outcome, each told from fresh evidence: the firmware
choice `uma/carveout` reads back, the managed modprobe file, the host's shutdown schedule.
Never run again to find out; a write that happened is never silently left behind."""

from __future__ import annotations

from magicstick_host.domain.decisions import ClassifiedStep, SetPhase, Situation, Wait
from magicstick_host.domain.operations.configure_gpu_memory.data import data_of
from magicstick_host.domain.operations.configure_gpu_memory.declared import (
    WRITE_CARVEOUT,
    WRITE_TTM,
)
from magicstick_host.domain.operations.configure_gpu_memory.phases import (
    pending_note,
    strix,
    written_note,
)
from magicstick_host.domain.operations.shutdown_steps import classify_shutdown
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.state import Operation
from magicstick_host.lite_dataclasses import replace


def classify(op: Operation, now: Situation) -> ClassifiedStep | Wait:
    ev, data = now.ev, data_of(op)
    step = op.open_step
    assert step is not None
    if step.name == WRITE_CARVEOUT:
        device = strix(ev)
        selected = device.uma.selected_index if device and device.uma else None
        if selected == data.carveout_index:
            return ClassifiedStep(
                "classified-done",
                f"uma/carveout reads {selected}",
                SetPhase(
                    Phase.PREPARING,
                    f"The firmware memory choice {selected} is selected.",
                    data=replace(data, carveout_written=True),
                    outcome="uncertain",
                ),
            )
        return ClassifiedStep(
            "unknown",
            f"uma/carveout reads {selected}",
            SetPhase(
                Phase.INTERRUPTED,
                f"The worker stopped while writing the firmware memory "
                f"choice; uma/carveout reads {selected}. Nothing was repeated.",
                outcome="uncertain",
            ),
        )
    if step.name == WRITE_TTM:
        wanted = (data.dynamic_limit_mi or 0) * 256
        if ev.ttm.managed_pages_limit == wanted:
            return ClassifiedStep(
                "classified-done",
                f"the managed modprobe file holds pages_limit={wanted}",
                SetPhase(
                    Phase.PREPARING,
                    "The dynamic limit is written for the next boot.",
                    data=replace(data, ttm_written=True),
                    outcome="uncertain",
                ),
            )
        return ClassifiedStep(
            "unknown",
            f"the managed modprobe file holds {ev.ttm.managed_pages_limit}",
            SetPhase(
                Phase.INTERRUPTED,
                "The worker stopped while writing the dynamic GPU memory "
                "limit, and the managed file does not hold it. Nothing was repeated."
                + pending_note(op),
                outcome="uncertain",
            ),
        )
    cls = classify_shutdown(op, ev, scheduled=Phase.REBOOT_SCHEDULED)
    if cls.then.phase == Phase.INTERRUPTED:
        rebooted = ev.boot_id != step.boot_id
        note = written_note(op) if rebooted else pending_note(op)
        then = SetPhase(Phase.INTERRUPTED, cls.then.message + note, outcome="uncertain")
        return ClassifiedStep(cls.outcome, cls.detail, then)
    return cls
