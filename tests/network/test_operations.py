"""The configure-network and scan-wifi decisions, pure: what each phase does from the trial
record, the request's status and annotation, and the clocks; how a step without an outcome is
told from what it left."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from magicstick_host.domain.cluster import ClusterView
from magicstick_host.domain.decisions import ClassifiedStep, RunStep, SetPhase, Situation, Wait
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.limits import DEFAULT_LIMITS
from magicstick_host.domain.network.capability import NetworkInventory
from magicstick_host.domain.network.operation import CONFIRMATION_ANNOTATION
from magicstick_host.domain.network.trial import Deadline, TrialRecord, new_trial
from magicstick_host.domain.operations import configure_network as configure
from magicstick_host.domain.operations import lifecycle
from magicstick_host.domain.operations import network_common as common
from magicstick_host.domain.operations import scan_wifi as scan
from magicstick_host.domain.operations.decide import decide
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.request import Accepted
from magicstick_host.domain.state import Operation, Step

BOOT, OTHER_BOOT = "boot-1", "boot-2"
REQUEST_ID = "0123456789abcdef0123456789abcdef"
UID = "op-uid"
PLAN = "a" * 64
WALL = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def operation(action: str = "configure-network", phase: Phase = Phase.ACCEPTED) -> Operation:
    accepted = Accepted(UID, REQUEST_ID, action, {}, "d" * 64, PLAN, False)
    op = lifecycle.start_operation(
        accepted, namespace="ai-system", name="host-x", boot_id=BOOT, wall=WALL,
        boottime=100.0, reboot_budget=0,
        data=common.NetworkData(f"host-network-{REQUEST_ID}", "secret-uid"))
    return replace(op, phase=phase)


def situation(*, boot: str = BOOT, published: str = "", annotation: str = "",
              trial: TrialRecord | None = None, network_id: str = PLAN, boottime: float = 110.0,
              **caps: Any) -> Situation:
    request: dict[str, Any] = {"metadata": {"uid": UID, "annotations": {}}, "status": {}}
    if published:
        request["status"] = {"phase": published, "requestId": REQUEST_ID}
    if annotation:
        request["metadata"]["annotations"][CONFIRMATION_ANNOTATION] = annotation
    cluster = ClusterView(node={"metadata": {"uid": "node-uid"}}, request=request)
    inventory = NetworkInventory(supported=True, message="", cluster_addresses=("192.0.2.5",))
    return Situation(
        ev=Evidence(boot_id=boot), wall=WALL, boottime=boottime, limits=DEFAULT_LIMITS,
        cluster=cluster,
        capabilities={"network": {"id": network_id, "supported": True},
                      common.NETWORK_INVENTORY: inventory, common.NETWORK_TRIAL: trial, **caps})


def trial(stage: str = "backed-up", **changes: Any) -> TrialRecord:
    record = new_trial(request_id=REQUEST_ID, request_uid=UID, settings={"interface": "enp1s0"},
                       boot_id=BOOT, backup=[], cluster_addresses=("192.0.2.5",), wall=WALL)
    return replace(record, stage=stage, **changes)


def test_accepted_reads_the_secret_once_and_changes_nothing_else() -> None:
    decision = decide(configure.CONFIGURE_NETWORK, operation(), situation())
    assert isinstance(decision, RunStep) and decision.step == common.READ_REQUEST
    assert decision.phase_on_done == Phase.APPLYING
    assert decision.inputs["clusterAddresses"] == ["192.0.2.5"]
    assert "password" not in str(decision.inputs)


def test_a_network_that_changed_since_the_review_is_rejected_before_anything() -> None:
    for op in (operation(), operation(phase=Phase.APPLYING)):
        decision = decide(configure.CONFIGURE_NETWORK, op,
                          situation(network_id="b" * 64, published="Applying"))
        assert isinstance(decision, SetPhase) and decision.phase == Phase.REJECTED
        assert "network id differs" in decision.message


def test_whatever_the_secret_step_refuses_is_rejected() -> None:
    for kind, op in ((configure.CONFIGURE_NETWORK, operation()),
                     (scan.SCAN_WIFI, operation("scan-wifi"))):
        decision = decide(kind, op, situation())
        assert isinstance(decision, RunStep) and decision.step == common.READ_REQUEST
        assert decision.phase_on_failure == Phase.REJECTED


def test_nothing_changes_before_the_dashboard_can_see_applying() -> None:
    op = operation(phase=Phase.APPLYING)
    assert isinstance(decide(configure.CONFIGURE_NETWORK, op, situation()), Wait)
    began = decide(configure.CONFIGURE_NETWORK, op, situation(published="Applying"))
    assert isinstance(began, RunStep) and began.step == configure.BEGIN_TRIAL


def test_the_trial_goes_stage_by_stage_and_records_the_deadline() -> None:
    op = operation(phase=Phase.APPLYING)
    write = decide(configure.CONFIGURE_NETWORK, op, situation(trial=trial("backed-up")))
    assert isinstance(write, RunStep) and write.step == configure.WRITE_CONFIG
    apply = decide(configure.CONFIGURE_NETWORK, op, situation(trial=trial("generating")))
    assert isinstance(apply, RunStep) and apply.step == configure.APPLY_CONFIG
    assert apply.phase_on_done == Phase.AWAITING_CONFIRMATION
    assert apply.inputs["deadlineBoottime"] == 110.0 + 180.0
    assert apply.data_on_done.confirmation_deadline == "2026-12-01T12:03:00Z"
    awaiting = replace(op, phase=Phase.AWAITING_CONFIRMATION, data=apply.data_on_done)
    assert lifecycle.status_of(awaiting)["confirmationDeadline"] == "2026-12-01T12:03:00Z"
    done = replace(awaiting, phase=Phase.SUCCEEDED)
    assert lifecycle.status_of(done)["confirmationDeadline"] is None  # merge patch: removed


def test_only_the_confirmation_of_this_request_keeps_the_change() -> None:
    op = operation(phase=Phase.AWAITING_CONFIRMATION)
    running = trial("awaiting", deadline=Deadline(BOOT, 290.0, "2026-12-01T12:03:00Z"))
    other = decide(configure.CONFIGURE_NETWORK, op, situation(trial=running, annotation="x"))
    assert isinstance(other, Wait)
    # the confirmation alone is not enough when the host does not hold what was chosen
    confirmed = decide(configure.CONFIGURE_NETWORK, op,
                       situation(trial=running, annotation=REQUEST_ID))
    assert isinstance(confirmed, Wait) and "Confirmed, but" in confirmed.message
    late = decide(configure.CONFIGURE_NETWORK, op,
                  situation(trial=running, annotation=REQUEST_ID, boottime=300.0))
    assert isinstance(late, RunStep) and late.step == configure.RESTORE_CONFIG
    assert late.phase_on_done == Phase.ROLLED_BACK


def test_an_apply_without_outcome_is_never_kept_nor_offered_for_confirmation() -> None:
    running = trial("applying", deadline=Deadline(BOOT, 290.0, "2026-12-01T12:03:00Z"))
    for phase in (Phase.APPLYING, Phase.AWAITING_CONFIRMATION):
        for annotation in ("", REQUEST_ID):
            decision = decide(configure.CONFIGURE_NETWORK, operation(phase=phase),
                              situation(trial=running, annotation=annotation))
            assert isinstance(decision, Wait | SetPhase), decision
            assert "will be rolled back at 2026-12-01T12:03:00Z" in decision.message
            assert "Confirmed, but" not in decision.message
            if isinstance(decision, SetPhase):
                assert decision.phase == Phase.APPLYING
            else:
                assert phase == Phase.APPLYING
    late = decide(configure.CONFIGURE_NETWORK, operation(phase=Phase.APPLYING),
                  situation(trial=running, annotation=REQUEST_ID, boottime=300.0))
    assert isinstance(late, RunStep) and late.step == configure.RESTORE_CONFIG
    assert late.phase_on_done == Phase.ROLLED_BACK
    assert "netplan apply" in late.message_on_done
    assert "not confirmed" not in late.message_on_done


def test_an_outcome_of_the_timer_or_the_boot_recovery_ends_the_operation() -> None:
    op = operation(phase=Phase.AWAITING_CONFIRMATION)
    ended = trial("rolling-back", outcome="rolled-back", outcome_by="boot-recovery",
                  message="restored at boot")
    decision = decide(configure.CONFIGURE_NETWORK, op, situation(boot=OTHER_BOOT, trial=ended))
    assert decision == SetPhase(Phase.ROLLED_BACK, "restored at boot")


def test_a_restart_before_the_trial_began_interrupts_with_nothing_changed() -> None:
    op = operation(phase=Phase.APPLYING)
    decision = decide(configure.CONFIGURE_NETWORK, op,
                      situation(boot=OTHER_BOOT, published="Applying"))
    assert isinstance(decision, SetPhase) and decision.phase == Phase.INTERRUPTED
    assert "nothing was changed" in decision.message


def with_open_step(op: Operation, name: str) -> Operation:
    step = Step(name=name, inputs={}, boot_id=BOOT, started_at="2026-12-01T12:00:00Z",
                started_boottime=100.0)
    return replace(op, steps=(step,))


def test_a_step_without_outcome_is_told_from_what_it_left() -> None:
    reading = with_open_step(operation(), common.READ_REQUEST)
    lost = configure.classify(reading, situation())
    assert isinstance(lost, ClassifiedStep) and lost.then.phase == Phase.INTERRUPTED
    kept = configure.classify(reading, situation(**{common.NETWORK_SETTINGS_KEPT: True}))
    assert isinstance(kept, ClassifiedStep) and kept.then.phase == Phase.APPLYING
    applying = with_open_step(operation(phase=Phase.APPLYING), configure.APPLY_CONFIG)
    mid_apply = configure.classify(applying, situation(trial=trial("applying", deadline=Deadline(
        BOOT, 290.0, "2026-12-01T12:03:00Z"))))
    # apply may have run: never again, never kept (so no confirmation is asked for); the
    # deadline decides
    assert isinstance(mid_apply, ClassifiedStep)
    assert mid_apply.then.phase == Phase.APPLYING
    assert "rolled back at 2026-12-01T12:03:00Z" in mid_apply.then.message
    scanning = with_open_step(operation("scan-wifi", Phase.PREPARING), scan.SCAN_STEP)
    assert scan.classify(scanning, situation()).then.phase == Phase.INTERRUPTED
    saved = scan.classify(scanning, situation(**{common.NETWORK_SCAN_AT: "2026-12-01T12:00:04Z"}))
    assert saved.then.phase == Phase.SUCCEEDED
