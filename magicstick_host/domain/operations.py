"""The operations this worker runs: how each decides, its restart budget, what it records."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from magicstick_host.domain.decisions import Decision, Situation
from magicstick_host.domain.intake import Accepted
from magicstick_host.domain.memory import decide_memory, memory_initial_data
from magicstick_host.domain.power import decide_power
from magicstick_host.domain.prepare import decide_prepare, prepare_initial_data
from magicstick_host.domain.state import Operation


def _no_data(req: Accepted, now: Situation) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class OperationKind:
    decide: Callable[[Operation, Situation], Decision]
    initial_data: Callable[[Accepted, Situation], dict[str, Any]]
    reboot_budget: int
    # the handoff reads ModuleActivation amd-gpu, so the tick fetches it for these
    reads_module_activation: bool = False


OPERATIONS: dict[str, OperationKind] = {
    "reboot": OperationKind(decide_power, _no_data, 1),
    "poweroff": OperationKind(decide_power, _no_data, 1),
    "prepare-gpu": OperationKind(
        decide_prepare, prepare_initial_data, 1, reads_module_activation=True
    ),
    "configure-gpu-memory": OperationKind(decide_memory, memory_initial_data, 2),
}
