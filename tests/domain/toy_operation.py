"""A toy operation, as a newcomer would add one: this module, its registration and its test.

It stands in for clear-model-cache (an action the CRD already accepts and the worker does not
run yet): Accepted → one step ("toy-clean") → Preparing → Succeeded. The registration is
`OPERATIONS[TOY.action] = TOY` (tests/tick/test_toy_operation.py does it for one test) plus its
effect in `EFFECTS[TOY_STEP]`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from magicstick_host.domain.canonical import sha256_hex
from magicstick_host.domain.cluster import APPLIANCE_API, SYSTEM_NAMESPACE, ClusterRead
from magicstick_host.domain.decisions import (
    ClassifiedStep,
    Decision,
    RunStep,
    SetPhase,
    Situation,
    Wait,
)
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.limits import Limits
from magicstick_host.domain.operations.kind import LegacyRules, OperationKind
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.request import Accepted, HostFacts, plan_id_problem
from magicstick_host.domain.state import Operation

ACTION = "clear-model-cache"
TOY_STEP = "toy-clean"
# an object the toy reads at intake and in every phase (absent on the test apiserver)
TOY_READ = ClusterRead("toy-activation", APPLIANCE_API, "moduleactivations", SYSTEM_NAMESPACE,
                       "toy")


def toy_capability_id(node_uid: str) -> str:
    return sha256_hex({"kind": "toy/1", "node": node_uid})


@dataclass(frozen=True)
class ToyData:
    node_uid: str
    cleaned: bool = False
    read_seen: bool | None = None


def check_request(spec: dict[str, Any], host: HostFacts, limits: Limits) -> str | None:
    problem = plan_id_problem(spec)
    if problem is not None:
        return problem
    if spec["planId"] != toy_capability_id(host.node_uid):
        return "The toy capability changed since it was reviewed."
    if spec["allowExperimental"] or spec["experimentMode"]:
        return "The toy takes no experimental flags."
    return None


def offered(ev: Evidence, capabilities: Mapping[str, Any]) -> bool:
    return True


def start(req: Accepted, now: Situation) -> ToyData:
    return ToyData(node_uid=now.cluster.node_uid,
                   read_seen=TOY_READ.key in now.cluster.objects)


def accepted(op: Operation, now: Situation) -> Decision:
    data = op.data
    assert isinstance(data, ToyData)
    return RunStep(
        step=TOY_STEP,
        inputs={"node": data.node_uid},
        phase_on_done=Phase.PREPARING,
        message_on_done="The toy cleaned up.",
        message_on_failure="The toy could not clean up.",
        data_on_done=replace(data, cleaned=True),
    )


def preparing(op: Operation, now: Situation) -> Decision:
    return SetPhase(Phase.SUCCEEDED, "The toy is done.")


def classify(op: Operation, now: Situation) -> ClassifiedStep | Wait:
    return ClassifiedStep(
        "unknown",
        "the toy cannot tell",
        SetPhase(Phase.INTERRUPTED, "The toy was interrupted; nothing was repeated.",
                 outcome="uncertain"),
    )


TOY = OperationKind(
    action=ACTION,
    request_fields=frozenset(),
    check_request=check_request,
    offered=offered,
    reads=(TOY_READ,),
    data=ToyData,
    start=start,
    phases={Phase.ACCEPTED: accepted, Phase.PREPARING: preparing},
    classify=classify,
    restart_budget=0,
    steps=frozenset({TOY_STEP}),
    legacy=LegacyRules(data=lambda current: (ToyData(node_uid=""), []), resumes={}),
)
