"""prepare-gpu: bring a Strix Halo host to the reviewed kernel and hand the GPU to the runtime.

operations.md, "prepare-gpu". The modules: data.py (what the operation records), request.py
(intake and when the report offers it), phases.py (Preparing, RebootScheduled, Verifying),
handoff.py (ModuleActivation), registration.py (Registering), classify.py (interrupted steps),
legacy.py (the original worker's operations); declared.py (its steps and cluster reads).
Its decisions load when a prepare-gpu operation runs (PhaseTable): every tick reads the
registry, and an idle one needs none of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from magicstick_host.domain.decisions import ClassifiedStep, Situation, Wait
from magicstick_host.domain.operations import offer_rules
from magicstick_host.domain.operations.kind import (
    LegacyRules,
    OperationKind,
    PhaseDecision,
    PhaseTable,
)
from magicstick_host.domain.operations.prepare_gpu import data, request
from magicstick_host.domain.operations.prepare_gpu.declared import (
    ACTIVATE_MODULE,
    APPLIANCE,
    INSTALL_PACKAGES,
    MODULE_ACTIVATION,
    REFRESH_EVIDENCE,
)
from magicstick_host.domain.operations.shutdown_steps import SCHEDULE_SHUTDOWN
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.state import Operation

if TYPE_CHECKING:
    from typing import Any


def _phases() -> Mapping[Phase, PhaseDecision]:
    from magicstick_host.domain.operations.prepare_gpu import phases
    from magicstick_host.domain.operations.prepare_gpu.registration import registering

    return {
        Phase.ACCEPTED: phases.accepted,
        Phase.PREPARING: phases.preparing,
        Phase.REBOOT_SCHEDULED: phases.reboot_scheduled,
        Phase.VERIFYING: phases.verifying,
        Phase.REGISTERING: registering,
        Phase.VALIDATING: registering,
    }


def _classify(op: Operation, now: Situation) -> ClassifiedStep | Wait:
    from magicstick_host.domain.operations.prepare_gpu.classify import classify

    return classify(op, now)


def _legacy_data(current: dict[str, Any]) -> tuple[Any, list[str]]:
    from magicstick_host.domain.operations.prepare_gpu.legacy import legacy_data

    return legacy_data(current)


PREPARE_GPU = OperationKind(
    action="prepare-gpu",
    request_fields=frozenset(),
    check_request=request.check_request,
    offered=offer_rules.prepare_gpu,
    reads=(MODULE_ACTIVATION, APPLIANCE),
    data=data.PrepareData,
    start=data.start,
    phases=PhaseTable(_phases),
    classify=_classify,
    restart_budget=1,
    steps=frozenset({INSTALL_PACKAGES, SCHEDULE_SHUTDOWN, REFRESH_EVIDENCE, ACTIVATE_MODULE}),
    legacy=LegacyRules(
        data=_legacy_data,
        resumes={
            Phase.REBOOT_SCHEDULED: "shutdown",
            Phase.REGISTERING: "registration",
            Phase.VALIDATING: "registration",
        },
    ),
)
