"""An apply without a recorded outcome (issue 24, N8; network.md, "The trial"): the tick died
right after `netplan apply`, before it recorded the outcome. Such a change is never kept,
confirmed or not, so the status says at once that it will be rolled back at the deadline and
that a confirmation cannot keep it, and it never invites a confirmation it will ignore (no
AwaitingConfirmation, no confirmationDeadline, in the HostOperation status, the report's
`operation` or `status --json`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from magicstick_host import app_console
from tests.kubeserver.fixtures import KubeCluster
from tests.network.helpers import CLUSTER_ETH
from tests.network.trial_helpers import CrashAt
from tests.network.world import STATIC_KEEPING_THE_CLUSTER_ADDRESS, NetworkWorld, hostop_status

pytestmark = pytest.mark.apiserver

@pytest.fixture
def world(tmp_path: Path, kube: KubeCluster) -> NetworkWorld:
    return NetworkWorld(tmp_path, kube, "network-ethernet-dhcp", CLUSTER_ETH)


status = hostop_status


def killed_right_after_apply(w: NetworkWorld) -> tuple[str, str]:
    """The request, then ticks until the one that dies right after `netplan apply`; then the
    next tick. Returns (requestId, the trial's wall deadline)."""
    request_id = w.request_network(STATIC_KEEPING_THE_CLUSTER_ADDRESS)
    crash = CrashAt("after-apply")
    for _ in range(8):
        w.tick(crash)
        if "after-apply" in crash.seen:
            break
    assert "after-apply" in crash.seen, crash.seen
    trial = w.store.load_trial()
    assert trial is not None and trial.stage == "applying" and trial.deadline is not None
    assert len(w.effects("netplan-apply")) == 1  # it did run
    w.tick()  # the next tick finds the step without an outcome
    return request_id, trial.deadline.wall


def never_invites_a_confirmation(w: NetworkWorld, deadline: str) -> None:
    published = status(w)
    console = app_console.status_document(str(w.state_dir), w.node_name)
    operation = (w.report() or {}).get("operation") or {}
    for where, phase, message in (
        ("HostOperation status", published.get("phase"), published.get("message", "")),
        ("report operation", operation.get("phase"), operation.get("message", "")),
        ("status --json", console["operation"]["phase"], console["operation"]["message"]),
    ):
        assert phase != "AwaitingConfirmation", (where, phase)
        assert f"rolled back at {deadline}" in message, (where, message)
        assert "a confirmation cannot keep it" in message, (where, message)
        assert "Confirm them" not in message and "confirm it before" not in message, message
    assert "confirmationDeadline" not in published or published["confirmationDeadline"] is None


def test_an_apply_without_outcome_says_it_rolls_back_and_asks_no_confirmation(
    world: NetworkWorld,
) -> None:
    before = world.netplan()
    _, deadline = killed_right_after_apply(world)
    never_invites_a_confirmation(world, deadline)
    world.tick_and_systemd()
    never_invites_a_confirmation(world, deadline)
    assert world.drive_network() == "RolledBack"
    assert world.netplan() == before
    assert len(world.effects("netplan-apply")) == 2  # the trial's and the rollback's, no more


def test_a_confirmation_of_an_apply_without_outcome_is_told_why_it_cannot_keep_it(
    world: NetworkWorld,
) -> None:
    before = world.netplan()
    request_id, deadline = killed_right_after_apply(world)
    world.confirm(request_id)
    world.tick_and_systemd()
    never_invites_a_confirmation(world, deadline)
    message = status(world)["message"]
    assert "Confirmed, but ." not in message and "but ." not in message, message
    assert "netplan apply" in message, message  # why: its outcome was never recorded
    assert world.drive_network() == "RolledBack"
    final = status(world)["message"]
    assert "netplan apply" in final and "not confirmed before" not in final, final
    assert world.netplan() == before
