"""The dashboard's side of the contract, as contract.md and operations.md give it.

The existing dashboard reads the host report and offers an action only when its own checks pass;
then it creates the HostOperation from report fields alone. These functions replay those checks
and build exactly those requests, so a test can hold the worker to what the dashboard will send.
"""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]
ACTIONABLE = ("available", "ready")


def plan_actionable(report: Json) -> bool:
    return report["plan"]["state"] in ACTIONABLE


def experiment_actionable(report: Json) -> bool:
    experiment = report["plan"].get("experiment")
    return isinstance(experiment, dict) and experiment.get("state") in ACTIONABLE


def prepare_spec(report: Json, *, experiment: bool = False) -> Json:
    """prepare-gpu: the plan (or its experiment) id; allowExperimental from that plan's
    `experimental`; experimentMode only for the experiment."""
    chosen = report["plan"]["experiment"] if experiment else report["plan"]
    return {
        "planId": chosen["id"],
        "allowExperimental": bool(chosen["experimental"]),
        "experimentMode": experiment,
    }


def memory_selection_valid(cap: Json, index: int, limit_mi: int) -> bool:
    """The dashboard's selection rules (operations.md, configure-gpu-memory)."""
    if cap.get("supported") is not True:
        return False
    option = next((o for o in cap["options"] if o["index"] == index), None)
    if option is None:
        return False
    if limit_mi % cap["stepMi"] or limit_mi < cap["minDynamicLimitMi"]:
        return False
    projected = cap["systemMemoryMi"] + cap["currentCarveoutMi"] - option["sizeMi"]
    if limit_mi > projected - cap["systemReserveMi"]:
        return False
    return (index, limit_mi) != (cap["currentCarveoutIndex"], cap["currentDynamicLimitMi"])


def a_memory_selection(cap: Json) -> tuple[int, int]:
    """A change an administrator could pick: another reservation with the largest valid limit
    up to 64 GiB, or, with a single option, another limit."""
    for option in sorted(cap["options"], key=lambda o: o["sizeMi"], reverse=True):
        projected = cap["systemMemoryMi"] + cap["currentCarveoutMi"] - option["sizeMi"]
        room = projected - cap["systemReserveMi"]
        limit = min(room - room % cap["stepMi"], 65536)
        if memory_selection_valid(cap, option["index"], limit):
            return option["index"], limit
    raise AssertionError(f"no valid selection offered by {cap}")


def memory_spec(cap: Json, index: int, limit_mi: int) -> Json:
    assert memory_selection_valid(cap, index, limit_mi), (index, limit_mi)
    return {
        "planId": cap["id"],
        "allowExperimental": True,
        "experimentMode": False,
        "gpuMemory": {"carveoutIndex": index, "dynamicLimitMi": limit_mi},
    }
