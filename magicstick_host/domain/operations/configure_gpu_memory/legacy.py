"""A configure-gpu-memory operation of the original worker, as this worker's record
(contract.md, "Upgrading from the original worker"): its `memoryDesired`, `memoryStage`,
`rebootCount` and the capability in its `plan`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.legacy_values import nonempty_str, plan_of, typed
from magicstick_host.domain.operations.configure_gpu_memory.data import (
    CarveoutChoice,
    MemoryData,
)
from magicstick_host.domain.records import record_from_json

if TYPE_CHECKING:
    from typing import Any


def _options(raw: Any) -> list[CarveoutChoice] | None:
    if not typed(raw, list):
        return None
    try:
        return [record_from_json(CarveoutChoice, option) for option in raw]
    except ValueError:
        return None


def legacy_data(current: dict[str, Any]) -> tuple[MemoryData, list[str]]:
    plan = plan_of(current)
    desired = current.get("memoryDesired") or {}
    stage: Any = {"uma": "carveout", "ttm": "ttm"}.get(str(current.get("memoryStage")))
    reboots = int(current.get("rebootCount") or 0)
    raw_options = plan.get("options") if typed(plan.get("options"), list) else None
    index = desired.get("carveoutIndex")
    sizes = {o.get("index"): o.get("sizeMi") for o in raw_options or () if isinstance(o, dict)}
    size = sizes.get(index)
    current_index = plan.get("currentCarveoutIndex")
    data = MemoryData(
        carveout_index=index,
        dynamic_limit_mi=desired.get("dynamicLimitMi"),
        pci_address=nonempty_str(plan.get("pciAddress")),
        from_carveout_index=current_index if typed(current_index, int) else None,
        options=_options(raw_options),
        new_carveout_mi=size if typed(size, int) else None,
        stage=stage,
        # a scheduled restart follows the write of its stage; a TTM stage after two restarts
        # followed a carve-out write
        carveout_written=stage == "carveout" or reboots >= 2,
        ttm_written=stage == "ttm",
        # the original kept no identity: verification checks what it can without one
        identity=None,
    )
    unknown = [
        key
        for key, value in (
            ("carveoutIndex", data.carveout_index),
            ("dynamicLimitMi", data.dynamic_limit_mi),
            ("pciAddress", data.pci_address),
            ("fromCarveoutIndex", data.from_carveout_index),
            ("options", data.options),
            ("newCarveoutMi", data.new_carveout_mi),
            ("stage", data.stage),
            ("identity", data.identity),
        )
        if value is None
    ]
    return data, unknown
