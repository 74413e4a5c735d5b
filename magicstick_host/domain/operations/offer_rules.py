"""When the report offers each action (the report's `actions`, in their order): the kinds'
`offered` predicates, apart from the rest of each operation.

`inspect` lists the actions the host offers, and importing the registry for that loaded every
operation's data records, intake rules and decisions (about a third of the console's inspect,
issue 26). The predicates read only the report's sections, so they live here, and the registry's
kinds name them (`OperationKind.offered`); tests/domain/test_operation_registry.py holds this
list to the registry's, action for action and in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

    from magicstick_host.domain.evidence import Evidence

# the plan states in which the dashboard may send the plan (or its experiment)
OFFERED_PLAN_STATES = ("available", "ready")


def prepare_gpu(ev: Evidence, capabilities: Mapping[str, Any]) -> bool:
    plan = capabilities.get("plan") or {}
    return plan.get("state") in OFFERED_PLAN_STATES or "experiment" in plan


def configure_gpu_memory(ev: Evidence, capabilities: Mapping[str, Any]) -> bool:
    return (capabilities.get("gpuMemory") or {}).get("supported") is True


def always(ev: Evidence, capabilities: Mapping[str, Any]) -> bool:
    return True


def clear_model_cache(ev: Evidence, capabilities: Mapping[str, Any]) -> bool:
    """Supported, not blocked and not empty (the report's own `modelCache`)."""
    section = capabilities.get("modelCache") or {}
    if not section:  # inspect's report has no such section: nothing to load for it
        return False
    from magicstick_host.domain.model_cache.capability import offered

    return offered(section)


def _network(capabilities: Mapping[str, Any]) -> dict[str, Any]:
    network = capabilities.get("network")
    return network if isinstance(network, dict) else {}


def configure_network(ev: Evidence, capabilities: Mapping[str, Any]) -> bool:
    return _network(capabilities).get("supported") is True


def scan_wifi(ev: Evidence, capabilities: Mapping[str, Any]) -> bool:
    return any(
        isinstance(i, dict) and i.get("scanSupported") is True
        for i in _network(capabilities).get("interfaces") or ()
    )


if TYPE_CHECKING:
    from collections.abc import Callable

    Offered = Callable[[Evidence, Mapping[str, Any]], bool]

# action -> predicate, in the report's order (the registry's OPERATIONS order)
OFFERS: tuple[tuple[str, Offered], ...] = (
    ("prepare-gpu", prepare_gpu),
    ("configure-gpu-memory", configure_gpu_memory),
    ("reboot", always),
    ("poweroff", always),
    ("clear-model-cache", clear_model_cache),
    ("configure-network", configure_network),
    ("scan-wifi", scan_wifi),
)
