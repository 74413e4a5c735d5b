"""The operations the soak asks for: one table entry each (`ACTIONS`), built from the published
report the way the dashboard builds requests (contract.md; tests/harness/dashboard.py holds its
checks).

The registry (magicstick_host/domain/operations/registry.py) is the source of what the worker
runs: an entry names a registered action, and the soak takes that operation's restart budget and
steps from its `OperationKind`. The entry adds only the administrator's side and the host's:
- `weight`: how often the soak's administrator picks it among the offered ones;
- `offered(report)`: when the dashboard offers it, from the report alone (`listed` when the
  report's `actions` is all the dashboard looks at);
- `spec(report, rng)`: the spec fields beyond the common ones;
- `effects`: which lines of the simulator's effects log (sim/effects_log.py) its steps leave, each
  mapped to the step it is the effect of (None: part of another effect, not counted);
- `prepare(cluster, namespace, spec)`: an optional hook run before the request is created, e.g.
  the request Secret a configure-network request refers to;
- `respond(host, operator, operation)`: an optional hook for what the cluster's other parts do
  for an active request of it between ticks (prepare-gpu: the device plugin and the operator).

Every registered operation must have an entry: `check_coverage` (run before every soak, and by
tests/soak/test_actions.py) names the ones missing. Adding one, e.g. clear-model-cache:
    SoakAction("clear-model-cache", 1.0, listed("clear-model-cache"), _model_cache_spec,
               effects={"remove-model-cache": "clear-model-cache"})
with `_model_cache_spec` returning `{"planId": report["modelCache"]["id"]}`; scan-wifi and
configure-network the same way, with the network `id` as planId and a `prepare` hook that
creates the request Secret their `networkRef` names.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from magicstick_host.domain.operations.kind import OperationKind
from magicstick_host.domain.operations.registry import OPERATIONS
from magicstick_host.domain.state import Operation
from tests.harness.dashboard import (
    experiment_actionable,
    memory_selection_valid,
    plan_actionable,
    prepare_spec,
)

Json = dict[str, Any]
REPORT_FRESH_PAST = timedelta(seconds=180)
REPORT_FRESH_FUTURE = timedelta(seconds=30)


Prepare = Callable[[Any, str, Json], None]  # (the test cluster, namespace, spec)
# (the SoakHost, the driver's Operator, the host's active Operation)
Respond = Callable[[Any, Any, Operation], None]


@dataclass(frozen=True)
class SoakAction:
    name: str  # an action of domain/operations/registry.py
    weight: float
    offered: Callable[[Json], bool]
    spec: Callable[[Json, random.Random], Json]
    effects: Mapping[str, str | None] = field(default_factory=dict)
    prepare: Prepare | None = None
    # what the cluster's other parts do for an active request of it, on the ticks the plan lets
    # them (`TickPlan.cluster_responds`), before the tick
    respond: Respond | None = None

    @property
    def kind(self) -> OperationKind:
        return OPERATIONS[self.name]

    @property
    def restart_budget(self) -> int:  # restarts one request may cause at most
        return self.kind.restart_budget

    @property
    def steps(self) -> frozenset[str]:  # the steps (effects) a request of it may run
        return self.kind.steps


def listed(action: str) -> Callable[[Json], bool]:
    """Offered when the report's `actions` lists it (the worker's own offer)."""
    return lambda report: action in (report.get("actions") or [])


def _always(report: Json) -> bool:
    return True


def _power_spec(report: Json, rng: random.Random) -> Json:
    return {}


def _prepare_offered(report: Json) -> bool:
    return plan_actionable(report) or experiment_actionable(report)


def _prepare(report: Json, rng: random.Random) -> Json:
    if plan_actionable(report) and (not experiment_actionable(report) or rng.random() < 0.5):
        return prepare_spec(report)
    return prepare_spec(report, experiment=True)


def _memory_choices(cap: Json) -> list[tuple[int, int]]:
    """Every selection the dashboard would accept, with limits on a coarse grid."""
    choices = []
    for option in cap.get("options") or []:
        projected = cap["systemMemoryMi"] + cap["currentCarveoutMi"] - option["sizeMi"]
        top = projected - cap["systemReserveMi"]
        for limit in range(cap["minDynamicLimitMi"], top + 1, 8 * cap["stepMi"]):
            if memory_selection_valid(cap, option["index"], limit):
                choices.append((option["index"], limit))
    return choices


def _memory_offered(report: Json) -> bool:
    cap = report.get("gpuMemory") or {}
    return cap.get("supported") is True and bool(_memory_choices(cap))


def _memory(report: Json, rng: random.Random) -> Json:
    cap = report["gpuMemory"]
    index, limit = rng.choice(_memory_choices(cap))
    return {
        "planId": cap["id"],
        "allowExperimental": True,
        "experimentMode": False,
        "gpuMemory": {"carveoutIndex": index, "dynamicLimitMi": limit},
    }


def _register_gpu(host: Any, operator: Any, op: Operation) -> None:
    """prepare-gpu waits in Registering/Validating for the device plugin (allocatable on the
    Node, once the kubelet reports the new boot) and the operator (Appliance `local`)."""
    if op.phase in ("Registering", "Validating") and not host.kubelet_behind:
        host.cluster.set_node_info(host.name, allocatable={"amd.com/gpu": "1"})
        operator.register(host.node_uid, host.boot_id)


SHUTDOWN_EFFECTS: Mapping[str, str | None] = {
    "shutdown": "schedule-shutdown", "shutdown-failed": "schedule-shutdown",
}

ACTIONS: tuple[SoakAction, ...] = (
    SoakAction("reboot", 1.0, _always, _power_spec, SHUTDOWN_EFFECTS),
    SoakAction("poweroff", 0.5, _always, _power_spec, SHUTDOWN_EFFECTS),
    SoakAction("prepare-gpu", 1.5, _prepare_offered, _prepare, {
        **SHUTDOWN_EFFECTS, "playbook:prepare.yml": "install-packages",
        "gpu-publish": "refresh-gpu-evidence",
    }, respond=_register_gpu),
    SoakAction("configure-gpu-memory", 1.5, _memory_offered, _memory, {
        **SHUTDOWN_EFFECTS, "playbook:memory.yml": "write-ttm-config",
        "initramfs": None,  # run by the memory playbook, counted with it
        # seen by the observer in sysfs (tests/soak/observe.py), not in the effects log
        "carveout-write": "write-carveout",
    }),
)
BY_NAME = {a.name: a for a in ACTIONS}
# not the worker's: a one-shot simulator fault the soak armed fired
FOREIGN_EFFECTS: Mapping[str, str | None] = {"fault": None}


def check_coverage(actions: tuple[SoakAction, ...] = ACTIONS) -> list[str]:
    """What keeps the table from soaking every registered operation as the registry has it."""
    names = [a.name for a in actions]
    problems = [f"{name}: registered, but tests/soak/actions.py has no entry for it"
                for name in OPERATIONS if name not in names]
    problems += [f"{name}: an entry, but the registry does not run it" for name in names
                 if name not in OPERATIONS]
    problems += [f"{name}: more than one entry" for name in set(names) if names.count(name) > 1]
    for action in actions:
        if action.name in OPERATIONS:
            problems += [f"{action.name}: effect {effect!r} maps to {step!r}, not a step of it"
                         for effect, step in action.effects.items()
                         if step is not None and step not in action.steps]
    return problems


def effect_steps(actions: tuple[SoakAction, ...] = ACTIONS) -> dict[str, str | None]:
    """Each kind of effect on the host -> the step it is the effect of (over all actions)."""
    out: dict[str, str | None] = dict(FOREIGN_EFFECTS)
    for action in actions:
        for effect, step in action.effects.items():
            if out.setdefault(effect, step) != step:
                raise ValueError(f"effect {effect!r} is the effect of {out[effect]!r} and of "
                                 f"{step!r} ({action.name})")
    return out


def report_fresh(report: Json, node: Json, now: datetime | None = None) -> bool:
    """The dashboard's freshness rules for the host report (contract.md, "The host report")."""
    now = now or datetime.now(UTC)
    info = (node.get("status") or {}).get("nodeInfo") or {}
    try:
        observed = datetime.fromisoformat(str(report["observedAt"]).replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return False
    return (
        report.get("schemaVersion") == 1
        and now - REPORT_FRESH_PAST <= observed <= now + REPORT_FRESH_FUTURE
        and report.get("nodeUid") == node["metadata"]["uid"]
        and report.get("bootId") == info.get("bootID")
        and report.get("kernel") == info.get("kernelVersion")
    )


def choose(report: Json, rng: random.Random) -> tuple[SoakAction, Json] | None:
    """What the administrator asks for now: an offered action and its spec fields."""
    offered = [a for a in ACTIONS if a.offered(report)]
    if not offered:
        return None
    action = rng.choices(offered, weights=[a.weight for a in offered])[0]
    return action, action.spec(report, rng)
