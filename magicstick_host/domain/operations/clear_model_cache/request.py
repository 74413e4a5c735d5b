"""clear-model-cache at intake and in the report's `actions` (model-cache.md, "The
operation", step 1): checked against the capability computed on this tick from a fresh walk
and freshly read workloads, never against what the report last showed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from magicstick_host.domain.limits import Limits
from magicstick_host.domain.model_cache.capability import (
    MODEL_CACHE_FACTS,
    ModelCacheFacts,
    clear_request_problem,
)
from magicstick_host.domain.request import HostFacts, plan_id_problem

if TYPE_CHECKING:
    from typing import Any

REQUEST_FIELDS: frozenset[str] = frozenset()


def facts_of(capabilities: Mapping[str, Any]) -> ModelCacheFacts | None:
    facts = capabilities.get(MODEL_CACHE_FACTS)
    return facts if isinstance(facts, ModelCacheFacts) else None


def check_request(spec: dict[str, Any], host: HostFacts, limits: Limits) -> str | None:
    problem = plan_id_problem(spec)
    if problem is not None:
        return problem
    facts = facts_of(host.capabilities)
    if facts is None or not facts.fresh:
        return ("The model caches could not be checked on this host just now; nothing was "
                "deleted. Try again.")
    return clear_request_problem(spec, facts.section, facts.blockers)
