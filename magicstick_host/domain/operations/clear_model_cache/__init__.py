"""clear-model-cache: delete the downloaded models of the host's two model caches.

model-cache.md. The modules: data.py (what the operation records), request.py (intake and
when the report offers it), phases.py (Preparing, Applying, interrupted steps). The
capability (`modelCache`) and its building blocks are domain/model_cache*.py; the tick's
look at the caches and the workloads is magicstick_host/model_cache_reads.py.
"""

from __future__ import annotations

from magicstick_host.domain.operations.clear_model_cache import data, phases, request
from magicstick_host.domain.operations.kind import LegacyRules, OperationKind
from magicstick_host.domain.phase import Phase

CLEAR_MODEL_CACHE = OperationKind(
    action="clear-model-cache",
    request_fields=request.REQUEST_FIELDS,
    check_request=request.check_request,
    offered=request.offered,
    # its cluster objects are lists (ModelActivations, KubeAI Models, Pods), read with the
    # caches themselves: magicstick_host/model_cache_reads.py
    reads=(),
    data=data.CleanupData,
    start=data.start,
    phases={
        Phase.ACCEPTED: phases.accepted,
        Phase.PREPARING: phases.preparing,
        Phase.APPLYING: phases.applying,
    },
    classify=phases.classify,
    restart_budget=0,
    steps=frozenset({phases.DELETE_STEP}),
    legacy=LegacyRules(data=data.legacy_data, resumes={}),
)
