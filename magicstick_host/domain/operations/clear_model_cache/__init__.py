"""clear-model-cache: delete the downloaded models of the host's two model caches.

model-cache.md. The modules: data.py (what the operation records), request.py (intake and
when the report offers it), phases.py (Preparing, Applying, interrupted steps), declared.py
(its step). Its decisions load when a clear-model-cache operation runs (PhaseTable). The
capability (`modelCache`) and its building blocks are domain/model_cache/; the tick's
look at the caches and the workloads is magicstick_host/model_cache_reads.py.
"""

from __future__ import annotations

from collections.abc import Mapping

from magicstick_host.domain.decisions import ClassifiedStep, Situation, Wait
from magicstick_host.domain.operations import offer_rules
from magicstick_host.domain.operations.clear_model_cache import data, request
from magicstick_host.domain.operations.clear_model_cache.declared import DELETE_STEP, SWEEP_STEP
from magicstick_host.domain.operations.kind import (
    LegacyRules,
    OperationKind,
    PhaseDecision,
    PhaseTable,
)
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.state import Operation


def _phases() -> Mapping[Phase, PhaseDecision]:
    from magicstick_host.domain.operations.clear_model_cache import phases

    return {
        Phase.ACCEPTED: phases.accepted,
        Phase.PREPARING: phases.preparing,
        Phase.APPLYING: phases.applying,
    }


def _classify(op: Operation, now: Situation) -> ClassifiedStep | Wait:
    from magicstick_host.domain.operations.clear_model_cache.phases import classify

    return classify(op, now)


CLEAR_MODEL_CACHE = OperationKind(
    action="clear-model-cache",
    request_fields=request.REQUEST_FIELDS,
    check_request=request.check_request,
    offered=offer_rules.clear_model_cache,
    # its cluster objects are lists (ModelActivations, KubeAI Models, Pods), read with the
    # caches themselves: magicstick_host/model_cache_reads.py
    reads=(),
    data=data.CleanupData,
    start=data.start,
    phases=PhaseTable(_phases),
    classify=_classify,
    restart_budget=0,
    steps=frozenset({DELETE_STEP, SWEEP_STEP}),
    legacy=LegacyRules(data=data.legacy_data, resumes={}),
)
