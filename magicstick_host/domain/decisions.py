"""What a tick may decide for the current operation: at most one of these per tick."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.limits import Limits


@dataclass(frozen=True)
class Situation:
    """Everything a stage decision may look at, observed on this tick."""

    ev: Evidence
    wall: datetime
    boottime: float
    limits: Limits
    # the own Node and the ModuleActivation, or None; `cluster_ok` is False when Kubernetes
    # could not be asked this tick (then nothing that needs it may proceed)
    node: dict[str, Any] | None = None
    module_activation: dict[str, Any] | None = None
    # Appliance `local` (None: not there); `appliance_served` False when the cluster has no
    # Appliance CRD at all, None when it was not asked this tick
    appliance: dict[str, Any] | None = None
    appliance_served: bool | None = None
    cluster_ok: bool = False
    plan: dict[str, Any] = field(default_factory=dict)
    gpu_memory: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunStep:
    """Perform one side effect under the step protocol (intent, effect, outcome)."""

    step: str  # the effect's name, e.g. "schedule-shutdown"
    inputs: dict[str, Any]
    phase_on_done: str
    message_on_done: str
    message_on_failure: str  # the effect's own error is appended
    phase_on_failure: str = "Failed"
    # recorded before the effect: a reboot that may happen counts against the budget
    uses_reboot: bool = False
    data_on_done: dict[str, Any] = field(default_factory=dict)
    data_on_failure: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SetPhase:
    phase: str
    message: str
    outcome: str = ""  # "uncertain" when reached by classification rather than proof
    data: dict[str, Any] = field(default_factory=dict)
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
