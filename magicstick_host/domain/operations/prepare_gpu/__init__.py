"""prepare-gpu: bring a Strix Halo host to the reviewed kernel and hand the GPU to the runtime.

operations.md, "prepare-gpu". The modules: data.py (what the operation records), request.py
(intake and when the report offers it), phases.py (Preparing, RebootScheduled, Verifying),
handoff.py (ModuleActivation), registration.py (Registering), classify.py (interrupted steps),
legacy.py (the original worker's operations).
"""

from __future__ import annotations

from magicstick_host.domain.operations.kind import LegacyRules, OperationKind
from magicstick_host.domain.operations.prepare_gpu import data, legacy, phases, request
from magicstick_host.domain.operations.prepare_gpu.classify import classify
from magicstick_host.domain.operations.prepare_gpu.handoff import (
    ACTIVATE_MODULE,
    MODULE_ACTIVATION,
    REFRESH_EVIDENCE,
)
from magicstick_host.domain.operations.prepare_gpu.registration import APPLIANCE, registering
from magicstick_host.domain.operations.shutdown_steps import SCHEDULE_SHUTDOWN
from magicstick_host.domain.phase import Phase

PREPARE_GPU = OperationKind(
    action="prepare-gpu",
    request_fields=frozenset(),
    check_request=request.check_request,
    offered=request.offered,
    reads=(MODULE_ACTIVATION, APPLIANCE),
    data=data.PrepareData,
    start=data.start,
    phases={
        Phase.ACCEPTED: phases.accepted,
        Phase.PREPARING: phases.preparing,
        Phase.REBOOT_SCHEDULED: phases.reboot_scheduled,
        Phase.VERIFYING: phases.verifying,
        Phase.REGISTERING: registering,
        Phase.VALIDATING: registering,
    },
    classify=classify,
    restart_budget=1,
    steps=frozenset(
        {phases.INSTALL_PACKAGES, SCHEDULE_SHUTDOWN, REFRESH_EVIDENCE, ACTIVATE_MODULE}
    ),
    legacy=LegacyRules(
        data=legacy.legacy_data,
        resumes={
            Phase.REBOOT_SCHEDULED: "shutdown",
            Phase.REGISTERING: "registration",
            Phase.VALIDATING: "registration",
        },
    ),
)
