"""Intake: every rejection rule of operations.md, each with its own message."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from magicstick_host.domain.evidence import CarveoutOption
from magicstick_host.domain.gpu_memory.capability import (
    GPU_MEMORY_CAPABILITY,
    GpuMemoryCapability,
)
from magicstick_host.domain.intake import review_request
from magicstick_host.domain.limits import DEFAULT_LIMITS
from magicstick_host.domain.request import (
    Accepted,
    HostFacts,
    Ignored,
    Rejected,
    request_digest,
)
from magicstick_host.domain.state import Block, Operation, ProcessedRequest, State
from tests.harness.factories import operation

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
BOOT = "3f1e2d4c-5b6a-4978-8a9b-0c1d2e3f4a5b"
NODE_UID = "6a1b2c3d-0000-4000-8000-00000000aaaa"
PLAN_ID = "a" * 64
EXP_ID = "b" * 64
MEM_ID = "c" * 64


CAPABILITY = GpuMemoryCapability(
    supported=True,
    message="ok",
    pci_address="0000:c5:00.0",
    options=(CarveoutOption(0, "Minimum", 512), CarveoutOption(3, "", 4096),
             CarveoutOption(9, "High", 32768)),
    current_carveout_index=0,
    current_carveout_mi=512,
    current_dynamic_limit_mi=63488,
    system_memory_mi=127953,
    system_reserve_mi=16384,
    step_mi=1024,
    min_dynamic_limit_mi=1024,
    id=MEM_ID,
)


def host(**kw: Any) -> HostFacts:
    base: dict[str, Any] = {
        "node_name": "strix-01",
        "node_uid": NODE_UID,
        "boot_id": BOOT,
        "now": NOW,
        "plan": {
            "state": "available",
            "id": PLAN_ID,
            "experimental": True,
            "experiment": {"id": EXP_ID, "state": "available", "experimental": True},
        },
        "gpu_memory": {"supported": True, "id": MEM_ID},
        "shutdown_scheduled": False,
        "memory_capability": CAPABILITY,
    }
    base.update(kw)
    capabilities = {
        "plan": base.pop("plan"),
        "gpuMemory": base.pop("gpu_memory"),
        GPU_MEMORY_CAPABILITY: base.pop("memory_capability"),
    }
    return HostFacts(**base, capabilities=capabilities)


def request(
    action: str = "reboot",
    *,
    uid: str = "req-uid-1",
    created: datetime = NOW,
    status: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
    **spec_kw: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "action": action,
        "nodeName": "strix-01",
        "nodeUid": NODE_UID,
        "bootId": BOOT,
        "requestId": "0123456789abcdef0123456789abcdef",
        "acknowledgeDisruption": True,
        "allowExperimental": False,
        "experimentMode": False,
        "actorHash": "d" * 64,
        "planId": "",
    }
    if action == "prepare-gpu":
        spec.update(planId=PLAN_ID, allowExperimental=True)
    if action == "configure-gpu-memory":
        spec.update(
            planId=MEM_ID,
            allowExperimental=True,
            gpuMemory={"carveoutIndex": 3, "dynamicLimitMi": 65536},
        )
    spec.update(spec_kw)
    obj: dict[str, Any] = {
        "metadata": {
            "uid": uid,
            "name": "host-abc",
            "creationTimestamp": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
            **(meta or {}),
        },
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def op(phase: str = "RebootScheduled") -> Operation:
    return operation("reboot", phase, boot_id=BOOT, request_uid="other-uid", request_id="f" * 32)

def rejected(
    obj: dict[str, Any], state: State | None = None, facts: HostFacts | None = None
) -> str:
    result = review_request(obj, state or State(), facts or host(), DEFAULT_LIMITS)
    assert isinstance(result, Rejected), result
    return result.message


@pytest.mark.parametrize("action", ["reboot", "poweroff", "prepare-gpu", "configure-gpu-memory"])
def test_a_valid_request_of_each_handled_action_is_accepted(action: str) -> None:
    result = review_request(request(action), State(), host(), DEFAULT_LIMITS)
    assert isinstance(result, Accepted)
    assert result.digest == request_digest("req-uid-1", request(action)["spec"])


@pytest.mark.parametrize(
    ("obj", "needle"),
    [
        (request(action="install-updates"), "not handled by this host worker"),
        (request(action="check-software-channel"), "not handled by this host worker"),
        (request(action="configure-network"), "not available on this host yet"),
        (request(action="clear-model-cache"), "not available on this host yet"),
        (request(action="format-disk"), "Unknown action"),
        (request(extraField=1), "do not belong to reboot"),
        (request(gpuMemory={"carveoutIndex": 1, "dynamicLimitMi": 1024}), "do not belong"),
        (request(requestId="unsafe/id"), "32 lowercase hexadecimal"),
        (request(requestId="A" * 32), "32 lowercase hexadecimal"),
        (request(nodeName="other-node"), "not 'strix-01'"),
        (request(nodeUid="someone-else"), "different node UID"),
        (request(bootId="00000000-0000-4000-8000-000000000000"), "different boot"),
        (request(created=NOW - timedelta(seconds=301)), "expired"),
        (request(created=NOW + timedelta(seconds=31)), "expired"),
        (request(acknowledgeDisruption=False), "not acknowledged"),
        (request(acknowledgeDisruption="true"), "real boolean"),
        (request(allowExperimental=1), "real boolean"),
        (request(experimentMode=True), "requires allowExperimental"),
        (request(planId=PLAN_ID), "carries no plan id"),
        (request(allowExperimental=True), "must not set the experimental flags"),
        (request(actorHash="me@example"), "actorHash"),
        (request("prepare-gpu", planId=""), "needs the 64-hex plan id"),
        (request("prepare-gpu", planId="e" * 64), "plan id differs"),
        (request("prepare-gpu", allowExperimental=False), "experimental"),
        (request("prepare-gpu", experimentMode=True), "experiment"),
        (request("configure-gpu-memory", planId="e" * 64), "id differs"),
        (request("configure-gpu-memory", allowExperimental=False), "requires allowExperimental"),
        (request("configure-gpu-memory", gpuMemory={"carveoutIndex": True,
                                                     "dynamicLimitMi": 65536}), "integers"),
        (request("configure-gpu-memory", gpuMemory={"carveoutIndex": 3}), "exactly gpuMemory"),
        (request("configure-gpu-memory", gpuMemory={"carveoutIndex": 4,
                                                     "dynamicLimitMi": 65536}), "not offered"),
        (request("configure-gpu-memory", gpuMemory={"carveoutIndex": 3,
                                                     "dynamicLimitMi": 65537}), "multiple"),
        (request("configure-gpu-memory", gpuMemory={"carveoutIndex": 9,
                                                     "dynamicLimitMi": 96256}), "above"),
        (request("configure-gpu-memory", gpuMemory={"carveoutIndex": 0,
                                                     "dynamicLimitMi": 63488}), "already active"),
        (request(meta={"deletionTimestamp": "2026-11-30T12:00:00Z"}), "being deleted"),
        (request(status={"phase": "Accepted"}), "execution state was lost"),
    ],
)
def test_each_rule_rejects_with_its_own_message(obj: dict[str, Any], needle: str) -> None:
    assert needle in rejected(obj)


def test_an_expired_request_says_nothing_was_executed() -> None:
    assert "no action was executed" in rejected(request(created=NOW - timedelta(minutes=10)))


def test_the_experiment_runs_only_with_its_own_id_and_both_flags() -> None:
    ok = request("prepare-gpu", planId=EXP_ID, experimentMode=True, allowExperimental=True)
    assert isinstance(review_request(ok, State(), host(), DEFAULT_LIMITS), Accepted)
    assert "plan id differs" in rejected(
        request("prepare-gpu", planId=PLAN_ID, experimentMode=True, allowExperimental=True)
    )
    no_exp = host(plan={"state": "blocked", "id": PLAN_ID, "experimental": True})
    assert "offers no experiment" in rejected(
        request("prepare-gpu", planId=EXP_ID, experimentMode=True), facts=no_exp
    )


def test_a_blocked_plan_is_rejected_with_its_reason() -> None:
    blocked = host(plan={"state": "blocked", "id": PLAN_ID, "message": "no reviewed profile"})
    assert "no reviewed profile" in rejected(request("prepare-gpu"), facts=blocked)


def test_unsupported_gpu_memory_is_rejected_with_its_reason() -> None:
    facts = host(gpu_memory={"supported": False, "id": MEM_ID, "message": "nouveau is bound"})
    assert "nouveau is bound" in rejected(request("configure-gpu-memory"), facts=facts)


def test_a_replayed_request_id_is_rejected() -> None:
    state = State(
        processed=(ProcessedRequest("old-uid", "0123456789abcdef0123456789abcdef", "Succeeded"),)
    )
    assert "replay" in rejected(request(uid="new-uid"), state)


def test_an_already_processed_uid_is_ignored_not_rejected_again() -> None:
    state = State(processed=(ProcessedRequest("req-uid-1", "x" * 32, "Rejected"),))
    assert isinstance(review_request(request(), state, host(), DEFAULT_LIMITS), Ignored)


def test_a_request_finished_before_our_records_is_left_alone() -> None:
    result = review_request(request(status={"phase": "Succeeded"}), State(), host(), DEFAULT_LIMITS)
    assert isinstance(result, Ignored)


def test_an_active_operation_blocks_a_new_request_and_is_named() -> None:
    message = rejected(request(), State(operation=op()))
    assert "reboot" in message and "f" * 32 in message and "RebootScheduled" in message


def test_a_finished_operation_does_not_block() -> None:
    result = review_request(request(), State(operation=op("Succeeded")), host(), DEFAULT_LIMITS)
    assert isinstance(result, Accepted)


def test_a_scheduled_shutdown_blocks_every_new_operation() -> None:
    assert "already scheduled" in rejected(request(), facts=host(shutdown_scheduled=True))


def test_a_stopped_worker_rejects_with_the_reason() -> None:
    state = State(
        block=Block("execution-state-removed", "execution state removed", NOW.isoformat())
    )
    assert "execution state removed" in rejected(request(), state)


def test_an_unreadable_boot_id_never_accepts() -> None:
    assert "boot ID cannot be read" in rejected(request(), facts=host(boot_id=None))


@pytest.mark.parametrize(
    "garbage",
    [
        {},
        {"metadata": "x"},
        {"metadata": {}, "spec": "x"},
        {"metadata": {"uid": "u"}, "spec": None},
        {"metadata": {"uid": "u"}, "spec": {"action": 5}},
    ],
)
def test_garbage_objects_never_crash_and_never_accept(garbage: dict[str, Any]) -> None:
    result = review_request(garbage, State(), host(), DEFAULT_LIMITS)
    assert not isinstance(result, Accepted)
