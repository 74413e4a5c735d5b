"""configure-gpu-memory: the Strix Halo's firmware carve-out and dynamic (TTM) limit.

operations.md, "configure-gpu-memory". The modules: data.py (what the operation records),
request.py (intake and when the report offers it), phases.py (Preparing, RebootScheduled),
verify.py (Verifying), classify.py (interrupted steps), legacy.py (the original worker's
operations). The capability itself (`gpuMemory`) is domain/gpu_memory/.
"""

from __future__ import annotations

from magicstick_host.domain.operations.configure_gpu_memory import data, legacy, phases, request
from magicstick_host.domain.operations.configure_gpu_memory.classify import classify
from magicstick_host.domain.operations.configure_gpu_memory.verify import verifying
from magicstick_host.domain.operations.kind import LegacyRules, OperationKind
from magicstick_host.domain.operations.shutdown_steps import SCHEDULE_SHUTDOWN
from magicstick_host.domain.phase import Phase

CONFIGURE_GPU_MEMORY = OperationKind(
    action="configure-gpu-memory",
    request_fields=request.REQUEST_FIELDS,
    check_request=request.check_request,
    offered=request.offered,
    reads=(),
    data=data.MemoryData,
    start=data.start,
    phases={
        Phase.ACCEPTED: phases.accepted,
        Phase.PREPARING: phases.preparing,
        Phase.REBOOT_SCHEDULED: phases.reboot_scheduled,
        Phase.VERIFYING: verifying,
    },
    classify=classify,
    restart_budget=2,
    steps=frozenset({phases.WRITE_CARVEOUT, phases.WRITE_TTM, SCHEDULE_SHUTDOWN}),
    legacy=LegacyRules(data=legacy.legacy_data, resumes={Phase.REBOOT_SCHEDULED: "shutdown"}),
)
