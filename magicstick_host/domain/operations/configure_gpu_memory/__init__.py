"""configure-gpu-memory: the Strix Halo's firmware carve-out and dynamic (TTM) limit.

operations.md, "configure-gpu-memory". The modules: data.py (what the operation records),
request.py (intake and when the report offers it), phases.py (Preparing, RebootScheduled),
verify.py (Verifying), classify.py (interrupted steps), legacy.py (the original worker's
operations), declared.py (its steps). The capability itself (`gpuMemory`) is
domain/gpu_memory/. Its decisions load when a configure-gpu-memory operation runs
(PhaseTable).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from magicstick_host.domain.decisions import ClassifiedStep, Situation, Wait
from magicstick_host.domain.operations import offer_rules
from magicstick_host.domain.operations.configure_gpu_memory import data, request
from magicstick_host.domain.operations.configure_gpu_memory.declared import (
    WRITE_CARVEOUT,
    WRITE_TTM,
)
from magicstick_host.domain.operations.kind import (
    LegacyRules,
    OperationKind,
    PhaseDecision,
    PhaseTable,
)
from magicstick_host.domain.operations.shutdown_steps import SCHEDULE_SHUTDOWN
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.state import Operation

if TYPE_CHECKING:
    from typing import Any


def _phases() -> Mapping[Phase, PhaseDecision]:
    from magicstick_host.domain.operations.configure_gpu_memory import phases
    from magicstick_host.domain.operations.configure_gpu_memory.verify import verifying

    return {
        Phase.ACCEPTED: phases.accepted,
        Phase.PREPARING: phases.preparing,
        Phase.REBOOT_SCHEDULED: phases.reboot_scheduled,
        Phase.VERIFYING: verifying,
    }


def _classify(op: Operation, now: Situation) -> ClassifiedStep | Wait:
    from magicstick_host.domain.operations.configure_gpu_memory.classify import classify

    return classify(op, now)


def _legacy_data(current: dict[str, Any]) -> tuple[Any, list[str]]:
    from magicstick_host.domain.operations.configure_gpu_memory.legacy import legacy_data

    return legacy_data(current)


CONFIGURE_GPU_MEMORY = OperationKind(
    action="configure-gpu-memory",
    request_fields=request.REQUEST_FIELDS,
    check_request=request.check_request,
    offered=offer_rules.configure_gpu_memory,
    reads=(),
    data=data.MemoryData,
    start=data.start,
    phases=PhaseTable(_phases),
    classify=_classify,
    restart_budget=2,
    steps=frozenset({WRITE_CARVEOUT, WRITE_TTM, SCHEDULE_SHUTDOWN}),
    legacy=LegacyRules(data=_legacy_data, resumes={Phase.REBOOT_SCHEDULED: "shutdown"}),
)
