"""The network operations' intake rules, the Secret consumed once, the blocking rule, and the
trial's next step from every stage (pure)."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any

import pytest

from magicstick_host.domain.network.capability import network_section
from magicstick_host.domain.network.operation import (
    CONFIGURE,
    SCAN,
    ApplyWithDeadline,
    AwaitConfirmation,
    AwaitRollback,
    Begin,
    Ended,
    Keep,
    RestoreNow,
    SecretConsumed,
    SecretRefused,
    Stalled,
    WriteAndGenerate,
    consume_secret,
    next_trial_step,
    spec_problem,
    trial_blocks,
)
from magicstick_host.domain.network.request import NetworkRef
from magicstick_host.domain.network.trial import (
    BackedUpFile,
    Deadline,
    TrialRecord,
    finish,
    new_trial,
)
from tests.network.helpers import CLUSTER_ETH, KEY, FakeClock, ethernet, inventory, sim_host

REQUEST = "0123456789abcdef0123456789abcdef"
NODE = "node-uid-1"
REF = NetworkRef(f"host-network-{REQUEST}", "secret-uid")


@pytest.fixture(scope="module")
def host_inventory(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return inventory(sim_host(tmp_path_factory.mktemp("n"), "network-ethernet-dhcp"),
                     (CLUSTER_ETH,))


def spec(**changes: Any) -> dict[str, Any]:
    return {"requestId": REQUEST, "networkRef": {"name": REF.name, "uid": REF.uid},
            "planId": "", "allowExperimental": False, "experimentMode": False, **changes}


def test_spec_rules(host_inventory: Any) -> None:
    network = network_section(host_inventory, KEY)
    ok = spec(planId=network["id"])
    assert spec_problem(ok, CONFIGURE, network) is None
    assert "network id differs" in str(spec_problem(spec(planId="0" * 64), CONFIGURE, network))
    assert "64-hex" in str(spec_problem(spec(planId=""), SCAN, network))
    assert "experimental" in str(spec_problem({**ok, "allowExperimental": True}, CONFIGURE,
                                              network))
    assert "networkRef" in str(spec_problem({**ok, "networkRef": None}, CONFIGURE, network))
    withdrawn = {**network, "supported": False, "message": "a bridge"}
    assert "a bridge" in str(spec_problem(ok, CONFIGURE, withdrawn))
    assert spec_problem(ok, SCAN, withdrawn) is None


def secret(settings: Any, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": REF.name, "namespace": "host-management", "uid": REF.uid,
                     "labels": {"appliance.magicstick.dev/request-id": REQUEST,
                                "appliance.magicstick.dev/network-node": NODE}, **meta},
        "immutable": True, "type": "appliance.magicstick.dev/network-request",
        "data": {"settings.json": base64.b64encode(json.dumps(settings).encode()).decode()},
    }


def consume(doc: dict[str, Any] | None, inv: Any, action: str = CONFIGURE) -> Any:
    return consume_secret(doc, REF, action=action, request_id=REQUEST, node_uid=NODE,
                          inventory=inv)


def test_the_secret_is_consumed_with_its_settings(host_inventory: Any) -> None:
    got = consume(secret(ethernet()), host_inventory)
    assert isinstance(got, SecretConsumed) and got.secret_uid == REF.uid
    assert got.settings.address == "10.20.0.33/24"
    scan = consume(secret({"interface": "wlp3s0"}), host_inventory, SCAN)
    assert isinstance(scan, SecretConsumed)


def test_a_refused_secret_is_deleted_only_when_it_is_the_named_one(host_inventory: Any) -> None:
    wrong_rule = consume(secret(ethernet(metric=0)), host_inventory)
    assert isinstance(wrong_rule, SecretRefused) and wrong_rule.delete_uid == REF.uid
    assert "rejected" in wrong_rule.message and "Nothing was changed" in wrong_rule.message
    mutable = consume({**secret(ethernet()), "immutable": False}, host_inventory)
    assert isinstance(mutable, SecretRefused) and mutable.delete_uid == REF.uid
    replaced = consume(secret(ethernet(), uid="another"), host_inventory)
    assert isinstance(replaced, SecretRefused) and replaced.delete_uid == ""
    missing = consume(None, host_inventory)
    assert isinstance(missing, SecretRefused) and missing.delete_uid == ""


def record(stage: str, **changes: Any) -> TrialRecord:
    trial = new_trial(request_id=REQUEST, request_uid="op", boot_id="boot-1",
                      settings={"interface": "enp2s0", "kind": "ethernet", "mode": "dhcp",
                                "address": "", "gateway": "", "dns": [], "metric": 100},
                      backup=[BackedUpFile("a.yaml", "0" * 64, 0o600)], cluster_addresses=[],
                      wall=FakeClock().wall)
    return replace(trial, stage=stage, **changes)


DEADLINE = Deadline("boot-1", 280.0, "2026-12-01T10:03:00Z")


def step(trial: TrialRecord | None, **kw: Any) -> Any:
    args: dict[str, Any] = {"request_id": REQUEST, "status_published": True,
                            "confirmation": None, "problems": [], "boot_id": "boot-1",
                            "boottime": 150.0, "idle_s": 0.0}
    args.update(kw)
    return next_trial_step(trial, **args)


def test_nothing_changes_before_the_status_is_published() -> None:
    assert isinstance(step(None, status_published=False), Stalled)
    assert isinstance(step(None), Begin)
    ended = step(None, idle_s=421)
    assert isinstance(ended, Ended) and ended.phase == "Interrupted"


def test_the_stages_go_forward_one_step_at_a_time() -> None:
    assert isinstance(step(record("backed-up")), WriteAndGenerate)
    assert isinstance(step(record("writing")), WriteAndGenerate)
    assert isinstance(step(record("generating")), ApplyWithDeadline)
    waiting = step(record("awaiting", deadline=DEADLINE))
    assert isinstance(waiting, AwaitConfirmation) and waiting.deadline_wall == DEADLINE.wall
    # an apply whose outcome was lost is never run again, nor kept (so no confirmation is
    # asked for, and one given changes nothing): the deadline decides
    for confirmation in (None, REQUEST):
        lost = step(record("applying", deadline=DEADLINE), confirmation=confirmation)
        assert isinstance(lost, AwaitRollback)
        assert f"rolled back at {DEADLINE.wall}; a confirmation cannot keep it" in lost.message
    late = step(record("applying", deadline=DEADLINE), confirmation=REQUEST, boottime=281.0)
    assert isinstance(late, RestoreNow) and late.apply and "netplan apply" in late.message


def test_confirmation_keeps_only_when_every_check_holds() -> None:
    awaiting = record("awaiting", deadline=DEADLINE)
    assert isinstance(step(awaiting, confirmation=REQUEST), Keep)
    assert isinstance(step(awaiting, confirmation="f" * 32), AwaitConfirmation)
    held = step(awaiting, confirmation=REQUEST, problems=["enp2s0 has no IPv4 address"])
    assert isinstance(held, AwaitConfirmation) and "Confirmed, but" in held.message
    late = step(awaiting, confirmation=REQUEST, problems=["the cluster address is lost"],
                boottime=281.0)
    assert isinstance(late, RestoreNow) and late.apply and "cluster address" in late.message
    unconfirmed = step(awaiting, boottime=281.0)
    assert isinstance(unconfirmed, RestoreNow) and "not confirmed" in unconfirmed.message
    assert isinstance(step(record("confirmed", deadline=DEADLINE), boottime=900.0), Keep)


def test_ends_restarts_and_stalls() -> None:
    done = finish(record("rolling-back"), "rolled-back", "deadline", "restored", FakeClock().wall)
    assert step(done) == Ended("RolledBack", "restored")
    failed = finish(record("rolling-back"), "failed", "deadline", "concurrent", FakeClock().wall)
    assert step(failed).phase == "Failed"
    other_boot = step(record("awaiting", deadline=DEADLINE), boot_id="boot-2")
    assert isinstance(other_boot, RestoreNow) and other_boot.apply
    stalled = step(record("generating"), idle_s=421)
    assert isinstance(stalled, RestoreNow) and not stalled.apply
    assert stalled.phase == "Interrupted"
    assert isinstance(step(record("rolling-back", deadline=DEADLINE)), RestoreNow)
    foreign = step(replace(record("awaiting"), request_id="f" * 32))
    assert isinstance(foreign, Ended) and foreign.phase == "Failed"


def test_an_unfinished_trial_blocks_everything() -> None:
    assert trial_blocks(None) is None
    assert "network trial is still running" in str(trial_blocks(record("awaiting")))
    assert trial_blocks(finish(record("awaiting"), "succeeded", "tick", "", FakeClock().wall)) \
        is None
