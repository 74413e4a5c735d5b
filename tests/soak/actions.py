"""The operations the soak asks for, one table entry each, built from the published report the
way the dashboard builds them (contract.md; tests/harness/dashboard.py holds its checks).

An entry says when the dashboard offers the action (from the report alone), which spec fields it
sends, and how many restarts one request may cause at most. Adding an operation is one entry,
e.g. when they land:
- clear-model-cache: offered when `report["modelCache"]["supported"]`; spec
  `{"planId": report["modelCache"]["id"]}`; restarts 0;
- scan-wifi / configure-network: offered from `report["network"]`; spec with the network `id`
  as planId and a `networkRef` to the request Secret the dashboard creates first (the entry's
  `prepare` hook would create it); restarts 0.
The soak's invariants read `restart_budget` and `steps` from here (tests/soak/invariants.py).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.harness.dashboard import (
    experiment_actionable,
    memory_selection_valid,
    plan_actionable,
    prepare_spec,
)

Json = dict[str, Any]
REPORT_FRESH_PAST = timedelta(seconds=180)
REPORT_FRESH_FUTURE = timedelta(seconds=30)


@dataclass(frozen=True)
class SoakAction:
    name: str
    weight: float  # how often the soak's administrator picks it among the offered ones
    restart_budget: int  # restarts one request may cause at most (operations.md)
    steps: frozenset[str]  # the worker's steps (effects) this action may run
    offered: Callable[[Json], bool]
    spec: Callable[[Json, random.Random], Json]


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


POWER_STEPS = frozenset({"schedule-shutdown"})
PREPARE_STEPS = frozenset(
    {"install-packages", "schedule-shutdown", "refresh-gpu-evidence", "activate-module"}
)
MEMORY_STEPS = frozenset({"write-carveout", "write-ttm-config", "schedule-shutdown"})

ACTIONS: tuple[SoakAction, ...] = (
    SoakAction("reboot", 1.0, 1, POWER_STEPS, _always, _power_spec),
    SoakAction("poweroff", 0.5, 1, POWER_STEPS, _always, _power_spec),
    SoakAction("prepare-gpu", 1.5, 1, PREPARE_STEPS, _prepare_offered, _prepare),
    SoakAction("configure-gpu-memory", 1.5, 2, MEMORY_STEPS, _memory_offered, _memory),
)
BY_NAME = {a.name: a for a in ACTIONS}


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
