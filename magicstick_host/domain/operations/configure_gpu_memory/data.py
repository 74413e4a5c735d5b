"""What a configure-gpu-memory operation records: the reviewed selection, the capability it was
reviewed on, the host identity that must not change, and which writes happened."""

from __future__ import annotations

from typing import Any, Literal

from magicstick_host.domain.decisions import Situation
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.fingerprint import hardware_fingerprint
from magicstick_host.domain.request import Accepted
from magicstick_host.domain.state import Operation
from magicstick_host.lite_dataclasses import dataclass


@dataclass(frozen=True)
class CarveoutChoice:
    """One firmware reservation option as it was reviewed (the capability's `options`)."""

    index: int
    size_mi: int
    label: str = ""


@dataclass(frozen=True)
class DisplayDevice:
    address: str
    pci_id: str
    driver: str | None


@dataclass(frozen=True)
class MemoryIdentity:
    """What must not change across the restarts (the carve-out capacity is excluded)."""

    kernel: str | None
    os: list[str | None]  # [ID, VERSION_ID]
    fingerprint: str | None
    amd_driver: list[str | None]
    devices: list[DisplayDevice]


@dataclass(frozen=True)
class MemoryData:
    # None only in an operation migrated from the original worker, which did not record it
    # (domain/legacy_state.py); the phases that continue from there do not read it
    carveout_index: int | None
    dynamic_limit_mi: int | None
    pci_address: str | None
    from_carveout_index: int | None
    options: list[CarveoutChoice] | None
    new_carveout_mi: int | None
    # the setting being changed now: the firmware carve-out first, then the TTM limit
    stage: Literal["carveout", "ttm"] | None
    carveout_written: bool
    ttm_written: bool
    # None: recorded by the original worker, which kept no identity
    identity: MemoryIdentity | None


def data_of(op: Operation) -> MemoryData:
    assert isinstance(op.data, MemoryData), op.data
    return op.data


def display_devices(ev: Evidence) -> list[DisplayDevice]:
    """The complete display inventory with its driver bindings, as the messages show it."""
    return [
        DisplayDevice(address=d.address, pci_id=d.pci_id, driver=d.driver)
        for d in sorted(ev.pci.devices, key=lambda d: d.address)
    ]


def memory_identity(ev: Evidence) -> MemoryIdentity:
    return MemoryIdentity(
        kernel=ev.kernel.release,
        os=[ev.os.id, ev.os.version_id],
        fingerprint=hardware_fingerprint(ev),
        amd_driver=[d.driver for d in ev.pci.strix_halo],
        devices=display_devices(ev),
    )


def start(req: Accepted, now: Situation) -> MemoryData:
    cap, selection = now.gpu_memory, req.spec["gpuMemory"]
    index, limit = int(selection["carveoutIndex"]), int(selection["dynamicLimitMi"])
    options = [
        CarveoutChoice(index=int(o["index"]), size_mi=int(o["sizeMi"]), label=str(o["label"]))
        for o in cap["options"]
    ]
    sizes = {o.index: o.size_mi for o in options}
    stage: Any = "carveout" if index != cap["currentCarveoutIndex"] else "ttm"
    return MemoryData(
        carveout_index=index,
        dynamic_limit_mi=limit,
        pci_address=cap["pciAddress"],
        from_carveout_index=cap["currentCarveoutIndex"],
        options=options,
        new_carveout_mi=sizes[index],
        stage=stage,
        carveout_written=False,
        ttm_written=False,
        identity=memory_identity(now.ev),
    )
