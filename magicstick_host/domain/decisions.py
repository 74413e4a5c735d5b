"""What a tick may decide for the current operation: at most one of these per tick."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from magicstick_host.domain.cluster import ClusterView
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.limits import Limits
from magicstick_host.domain.phase import Phase
from magicstick_host.lite_dataclasses import dataclass, field

if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class Situation:
    """Everything a stage decision may look at, observed on this tick."""

    ev: Evidence
    wall: datetime
    boottime: float
    limits: Limits
    # what Kubernetes showed (the Node, the objects the operation reads); `cluster.ok` is False
    # when it could not be asked this tick
    cluster: ClusterView = field(default_factory=ClusterView)
    # this tick's capabilities by report section: "plan", "gpuMemory", ...
    capabilities: Mapping[str, Any] = field(default_factory=dict)

    @property
    def plan(self) -> dict[str, Any]:
        plan: dict[str, Any] = self.capabilities.get("plan") or {}
        return plan

    @property
    def gpu_memory(self) -> dict[str, Any]:
        gpu_memory: dict[str, Any] = self.capabilities.get("gpuMemory") or {}
        return gpu_memory


@dataclass(frozen=True)
class RunStep:
    """Perform one side effect under the step protocol (intent, effect, outcome)."""

    step: str  # the effect's name, e.g. "schedule-shutdown" (effects/__init__.py)
    inputs: dict[str, Any]
    phase_on_done: Phase
    message_on_done: str
    message_on_failure: str  # the effect's own error is appended
    phase_on_failure: Phase = Phase.FAILED
    # recorded before the effect: a reboot that may happen counts against the budget
    uses_reboot: bool = False
    # the operation's data record after the step, when the step changes it
    data_on_done: Any = None
    data_on_failure: Any = None


@dataclass(frozen=True)
class SetPhase:
    phase: Phase
    message: str
    outcome: str = ""  # "uncertain" when reached by classification rather than proof
    # the operation's new data record, when the change records something
    data: Any = None
    # a phase change that starts a new deadline (e.g. RebootScheduled after classification)
    restart_clock: bool = True


@dataclass(frozen=True)
class Wait:
    """Nothing to do yet; the message tells the administrator what we are waiting for."""

    message: str


@dataclass(frozen=True)
class ClassifiedStep:
    """An intent without outcome, classified from fresh evidence (never by re-running it)."""

    outcome: str  # "classified-done" | "unknown"
    detail: str
    then: SetPhase


Decision = RunStep | SetPhase | Wait | ClassifiedStep
