"""What an operation module provides: everything particular to one action, as one value.

The registry (registry.py) lists these; intake, the report's `actions`, the tick's cluster
reads, the phase dispatch (decide.py) and the legacy migration read only this.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from magicstick_host.domain.cluster import ClusterRead
from magicstick_host.domain.decisions import ClassifiedStep, Decision, Situation, Wait
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.limits import Limits
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.records import NoData
from magicstick_host.domain.request import Accepted, HostFacts
from magicstick_host.domain.state import Operation
from magicstick_host.lite_dataclasses import dataclass

if TYPE_CHECKING:
    from typing import Any, Literal

# one stage of an operation: what to do next in this phase
PhaseDecision = Callable[[Operation, Situation], Decision]
# an intent without outcome, told from fresh evidence (never by running the step again)
ClassifyStep = Callable[[Operation, Situation], ClassifiedStep | Wait]
# the per-action intake rules: None when the request is fine, else the rejection message.
# The common rules (fields, node, boot, age, flags) are checked before (domain/intake.py).
if TYPE_CHECKING:
    CheckRequest = Callable[[dict[str, Any], HostFacts, Limits], str | None]
    # whether the report offers the action now (the host is idle and has a boot ID: intake.py)
    Offered = Callable[[Evidence, Mapping[str, Any]], bool]
    # how an original-worker phase goes on (domain/legacy_state.py): the restart it scheduled is
    # proven by a new boot, or the registration is checked again
    LegacyResume = Literal["shutdown", "registration"]


@dataclass(frozen=True)
class LegacyRules:
    """How the original worker's `current` of this action migrates (contract.md)."""

    # the data record from the original's `current`, and the keys it could not fill (None)
    data: Callable[[dict[str, Any]], tuple[Any, list[str]]]
    resumes: Mapping[Phase, LegacyResume]


@dataclass(frozen=True)
class OperationKind:
    action: str  # the request's spec.action
    # request fields beyond the common ones (contract.md, "Spec fields")
    request_fields: frozenset[str]
    check_request: CheckRequest
    offered: Offered
    reads: tuple[ClusterRead, ...]
    # the data record type, and the record an accepted request starts with
    data: type
    start: Callable[[Accepted, Situation], Any]
    # every non-terminal phase the operation can be in, with its decision; a phase without one
    # is a defect (tests/domain/test_operation_registry.py), stopped as Interrupted (decide.py).
    # A PhaseTable imports the decisions when the operation runs.
    phases: Mapping[Phase, PhaseDecision]
    classify: ClassifyStep
    restart_budget: int
    # the effects (effects/__init__.py) its steps run
    steps: frozenset[str]
    legacy: LegacyRules | None = None


def no_data(req: Accepted, now: Situation) -> NoData:
    """`start` of an operation that records nothing at acceptance."""
    return NoData()


class PhaseTable(Mapping[Phase, PhaseDecision]):
    """An operation's phase decisions, from `load` the first time one is looked up.

    Every tick loads the registry (intake, the report's `actions` and the state codec read
    it), but only a tick with an operation in a phase needs that operation's decisions, and
    their modules are a dozen of the idle tick's imports (issue "The idle tick at the floor").
    `load` imports them inside its body and returns the table."""

    __slots__ = ("_load", "_table")

    def __init__(self, load: Callable[[], Mapping[Phase, PhaseDecision]]) -> None:
        self._load = load
        self._table: Mapping[Phase, PhaseDecision] | None = None

    def _loaded(self) -> Mapping[Phase, PhaseDecision]:
        if self._table is None:
            self._table = self._load()
        return self._table

    def __getitem__(self, phase: Phase) -> PhaseDecision:
        return self._loaded()[phase]

    def __iter__(self) -> Iterator[Phase]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())

    def __repr__(self) -> str:
        return f"PhaseTable({dict(self._loaded())!r})"
