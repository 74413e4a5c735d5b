"""The soak's invariant checks themselves: each reports a bad effects log, journal, state or
exit code, and stays silent on a good one (a checker that cannot fail is a defect)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from magicstick_host.domain.state import Block, Operation, ProcessedRequest, State, Step
from magicstick_host.domain.text import MAX_MESSAGE
from tests.harness.factories import operation
from tests.soak.invariants import (
    RSS_BOUND_BYTES,
    HostLedger,
    Observation,
    TickRun,
    Violation,
    check_tick,
    local_step_due,
)

BOOT = "11111111-1111-4111-8111-111111111111"
NEW_BOOT = "22222222-2222-4222-8222-222222222222"
RID = "a" * 32
OTHER_RID = "b" * 32


def intent(name: str = "schedule-shutdown", boot: str = BOOT, outcome: str | None = "done"
           ) -> Step:
    return Step(name, {}, boot, "2026-11-30T12:00:01Z", 101.0, outcome=outcome)


def op(action: str = "reboot", phase: str = "RebootScheduled", *steps: Step,
       **kw: Any) -> Operation:
    return operation(action, phase, boot_id=BOOT, request_id=RID, steps=steps, **kw)


def shutdown(boot: str = BOOT) -> dict[str, Any]:
    return {"effect": "shutdown", "argv": ["shutdown", "-r", "+1"], "bootId": boot}


def entry(phase: str, rid: str = RID, event: str = "phase") -> dict[str, Any]:
    return {"event": event, "requestId": rid, "phase": phase}


def ledger(asked: str = "reboot") -> HostLedger:
    return HostLedger("h", bound_s=45.0, asked={RID: asked})


def journal_for(state: State | None) -> list[dict[str, Any]]:
    o = state.operation if state else None
    return [entry("Accepted", event="accepted"), entry(o.phase)] if o else []


def obs(tick: int = 1, state: State | None = None, effects: list[dict[str, Any]] | None = None,
        journal: list[dict[str, Any]] | None = None, **kw: Any) -> Observation:
    base = Observation(
        tick=tick, run=TickRun(0, 1.0), state=state, state_error="",
        journal=journal_for(state) if journal is None else journal, effects=effects or [],
        shutdown_appeared=False, hostop=None, status_exit=0,
        status_doc={"stateError": "", "block": None},
    )
    return replace(base, **kw)


def rules(violations: list[Violation]) -> list[str]:
    return [v.rule for v in violations]


def test_a_clean_reboot_passes_every_check() -> None:
    book = ledger()
    state = State(operation=op("reboot", "RebootScheduled", intent()))
    assert check_tick(book, obs(1, state, [shutdown()], shutdown_appeared=True)) == []
    done = State(operation=op("reboot", "Succeeded", intent()),
                 processed=(ProcessedRequest("uid", RID, "Succeeded"),))
    journal = [*journal_for(state), entry("Succeeded")]
    hostop = {"metadata": {"uid": "uid"}, "status": {"phase": "Succeeded"}}
    assert check_tick(book, obs(2, done, journal=journal, hostop=hostop)) == []


@pytest.mark.parametrize(
    ("state", "asked", "effect", "rule"),
    [
        (State(), "reboot", shutdown(), "effect without an accepted request"),
        (State(operation=op("reboot", "RebootScheduled", intent())), None, shutdown(),
         "effect without an accepted request"),
        (State(operation=op("reboot", "Accepted")), "reboot", shutdown(),
         "effect without a saved intent of this boot"),
        (State(operation=op("reboot", "RebootScheduled", intent(boot=NEW_BOOT))), "reboot",
         shutdown(), "effect without a saved intent of this boot"),
        (State(operation=op("reboot", "RebootScheduled", intent("install-packages"))), "reboot",
         {"effect": "playbook", "playbook": "prepare.yml", "bootId": BOOT},
         "effect foreign to the action"),
        (State(operation=op("reboot", "Rejected", intent()),
               processed=(ProcessedRequest("uid", RID, "Rejected"),)), "reboot", shutdown(),
         "effect of a rejected request"),
        (State(operation=op("reboot", "Accepted")), "reboot", {"effect": "format-disk"},
         "unknown effect on the host"),
    ],
)
def test_an_effect_that_no_accepted_request_explains_is_reported(
        state: State, asked: str | None, effect: dict[str, Any], rule: str) -> None:
    book = ledger(asked or "reboot")
    if asked is None:
        book.asked = {OTHER_RID: "reboot"}
    assert rule in rules(check_tick(book, obs(1, state, [effect])))


def test_an_effect_run_more_often_than_it_has_intents_is_a_replay() -> None:
    book = ledger()
    state = State(operation=op("reboot", "RebootScheduled", intent()))
    assert check_tick(book, obs(1, state, [shutdown()])) == []
    assert "step replayed" in rules(check_tick(book, obs(2, state, [shutdown()])))


def test_more_restarts_than_the_budget_are_reported() -> None:
    book = ledger("configure-gpu-memory")
    steps = (intent("write-carveout"), intent(), intent("write-ttm-config"), intent(), intent())
    state = State(operation=op("configure-gpu-memory", "RebootScheduled", *steps))
    for tick in (1, 2):
        assert "restart budget exceeded" not in rules(
            check_tick(book, obs(tick, state, [shutdown()])))
    assert "restart budget exceeded" in rules(check_tick(book, obs(3, state, [shutdown()])))


def test_a_shutdown_missing_from_the_log_still_counts_against_the_budget() -> None:
    book = ledger()
    state = State(operation=op("reboot", "RebootScheduled", intent(), intent()))
    check_tick(book, obs(1, state, [shutdown()]))
    found = check_tick(book, obs(2, state, [], shutdown_appeared=True))
    assert "restart budget exceeded" in rules(found)


def test_a_terminal_phase_that_changes_locally_is_reported() -> None:
    book = ledger()
    first = State(processed=(ProcessedRequest("uid", RID, "Failed"),))
    assert check_tick(book, obs(1, first)) == []
    later = State(processed=(ProcessedRequest("uid", RID, "Succeeded"),))
    assert "terminal phase changed locally" in rules(check_tick(book, obs(2, later)))


def test_a_terminal_status_that_changes_or_disagrees_is_reported() -> None:
    book = ledger()
    hostop = {"metadata": {"uid": "uid"}, "status": {"phase": "Interrupted"}}
    local = State(processed=(ProcessedRequest("uid", RID, "Interrupted"),))
    assert check_tick(book, obs(1, local, hostop=hostop)) == []
    changed = {"metadata": {"uid": "uid"}, "status": {"phase": "Succeeded"}}
    found = rules(check_tick(book, obs(2, local, hostop=changed)))
    assert "terminal phase changed in the HostOperation status" in found
    assert "HostOperation status disagrees with the local terminal phase" in found


def test_a_replaced_hostoperation_is_tracked_afresh() -> None:
    book = ledger()
    check_tick(book, obs(1, hostop={"metadata": {"uid": "u1"}, "status": {"phase": "Failed"}}))
    book.forget_hostop("u1")
    again = {"metadata": {"uid": "u1"}, "status": {"phase": "Succeeded"}}
    assert check_tick(book, obs(2, hostop=again)) == []


def test_a_transition_missing_from_the_journal_is_reported_after_a_loading_tick() -> None:
    book = ledger()
    state = State(operation=op("reboot", "RebootScheduled", intent()))
    only_accepted = [entry("Accepted", event="accepted")]
    killed = TickRun(-9, 0.4, killed=True)
    # a killed tick may leave the last entry to the next load's repair
    assert check_tick(book, obs(1, state, journal=only_accepted, run=killed)) == []
    found = check_tick(book, obs(2, state, journal=only_accepted))
    assert rules(found) == ["journal incomplete"]
    assert "RebootScheduled" in found[0].evidence
    no_accepted = [entry("RebootScheduled")]
    assert "journal incomplete" in rules(check_tick(ledger(), obs(1, state, journal=no_accepted)))


def test_a_journal_that_leaves_a_terminal_phase_is_reported() -> None:
    state = State(operation=op("reboot", "Succeeded", intent()))
    journal = [*journal_for(state), entry("RebootScheduled")]
    found = rules(check_tick(ledger(), obs(1, state, journal=journal)))
    assert "journal leaves a terminal phase" in found


@pytest.mark.parametrize(
    ("run", "rule"),
    [
        (TickRun(70, 1.0, "magicstick-host: internal error: RecursionError"), "exit code 70"),
        (TickRun(3, 1.0, "bad input"), "undocumented tick exit code"),
        (TickRun(1, 1.0, "Traceback ...\nSimulatedCrash: killed"), "undocumented tick exit code"),
        (TickRun(0, 46.0), "tick over its bound"),
        (TickRun(-9, 90.0, killed=True, over_bound=True), "tick over its bound"),
        (TickRun(0, 1.0, "Traceback (most recent call last):"), "traceback on stderr"),
    ],
)
def test_bad_exits_and_slow_ticks_are_reported(run: TickRun, rule: str) -> None:
    assert rule in rules(check_tick(ledger(), obs(1, run=run)))


def test_a_kill_and_a_simulated_crash_mid_playbook_are_not_violations() -> None:
    assert check_tick(ledger(), obs(1, run=TickRun(-9, 0.3, killed=True))) == []
    fired = {"effect": "fault", "fault": "apt-crash-halfway", "bootId": BOOT}
    crash = TickRun(1, 0.8, "Traceback (most recent call last):\nSimulatedCrash: killed")
    open_step = intent("install-packages", outcome=None)
    state = State(operation=op("prepare-gpu", "Preparing", open_step))
    book = ledger("prepare-gpu")
    found = check_tick(book, obs(1, state, [fired], run=crash, journal=journal_for(state)))
    assert found == []


@pytest.mark.parametrize(
    ("changes", "rule"),
    [
        ({"state_error": "state.json: not JSON"}, "state does not load"),
        ({"status_exit": 70, "status_doc": None}, "status --json failed"),
        ({"status_doc": {"stateError": "unreadable", "block": None}},
         "status shows a state error"),
        ({"status_doc": {"stateError": "", "block": {"code": "mystery"}}}, "undocumented block"),
        ({"status_doc": {"stateError": "", "block": {"code": "state-corrupt"}}},
         "state corrupt although only the worker writes it"),
    ],
)
def test_a_state_that_does_not_load_is_reported(changes: dict[str, Any], rule: str) -> None:
    assert rule in rules(check_tick(ledger(), obs(1, **changes)))


def test_a_documented_block_is_not_a_violation() -> None:
    block = Block("execution-state-removed", "removed", "2026-11-30T12:00:00Z")
    doc = {"stateError": "", "block": block.to_json()}
    assert check_tick(ledger(), obs(1, State(block=block), status_doc=doc)) == []


def test_a_rejection_missing_from_the_journal_is_reported() -> None:
    rejected = State(processed=(ProcessedRequest("uid", RID, "Rejected"),))
    assert rules(check_tick(ledger(), obs(1, rejected))) == ["journal incomplete"]
    journal = [entry("Rejected", event="rejected")]
    assert check_tick(ledger(), obs(1, rejected, journal=journal)) == []


def apply_effect(effect: str = "netplan-apply") -> dict[str, Any]:
    return {"effect": effect, "argv": ["netplan", "apply"], "bootId": BOOT}


def test_an_effect_of_several_steps_counts_against_the_intents_of_all_of_them() -> None:
    # netplan apply: once by the trial's apply, once by its restore; a third is a replay
    steps = (intent("apply-network-config"), intent("restore-network-config"))
    state = State(operation=op("configure-network", "AwaitingConfirmation", *steps))
    book = ledger("configure-network")
    assert check_tick(book, obs(1, state, [apply_effect(), apply_effect()])) == []
    assert rules(check_tick(book, obs(2, state, [apply_effect()]))) == ["step replayed"]


def test_an_effect_of_several_steps_needs_an_intent_of_one_of_them() -> None:
    state = State(operation=op("configure-network", "Applying",
                               intent("write-network-config")))
    found = rules(check_tick(ledger("configure-network"), obs(1, state, [apply_effect()])))
    assert found == ["effect without a saved intent of this boot", "step replayed"]


def test_a_removed_cache_entry_the_cleanup_may_not_delete_is_no_step_s_effect() -> None:
    state = State(operation=op("clear-model-cache", "Applying", intent("delete-cache-entry")))
    token = {"effect": "cache-entry-removed-not-clearable", "path": "/x/token", "bootId": BOOT}
    found = rules(check_tick(ledger("clear-model-cache"), obs(1, state, [token])))
    assert found == ["unknown effect on the host"]


# -- issue #24: the hostile inputs' invariants --------------------------------------------------


def test_a_hostile_tool_process_alive_after_its_tick_is_reported() -> None:
    left = ["4242 sleep 3600"]
    assert "a hostile tool process outlived its tick" in rules(
        check_tick(ledger(), obs(1, leftover_processes=left)))
    # after a tick the soak SIGKILLed, the soak kills them itself (systemd's cgroup would)
    killed = TickRun(-9, 1.0, killed=True)
    assert check_tick(ledger(), obs(1, run=killed, leftover_processes=left)) == []
    assert check_tick(ledger(), obs(1, leftover_processes=[])) == []


def test_a_tick_over_its_peak_rss_bound_is_reported() -> None:
    fat = TickRun(0, 1.0, peak_rss_bytes=RSS_BOUND_BYTES + 1)
    assert "tick peak RSS over its bound" in rules(check_tick(ledger(), obs(1, run=fat)))
    lean = TickRun(0, 1.0, peak_rss_bytes=60 * 2**20)
    assert check_tick(ledger(), obs(1, run=lean)) == []


@pytest.mark.parametrize("received", [(1, 0), (1, 517), (0, 3)])
def test_a_decoy_that_got_a_connection_or_a_byte_is_reported(received: tuple[int, int]) -> None:
    assert "the decoy server of a planted memo was contacted" in rules(
        check_tick(ledger(), obs(1, decoy_received=received)))


def test_a_due_local_step_that_did_not_run_is_reported() -> None:
    waiting = op("reboot", "RebootScheduled", intent())
    state = State(operation=waiting)
    found = check_tick(ledger(), obs(2, state, awaiting_boot=waiting, boot_id=NEW_BOOT,
                                     run=TickRun(5, 1.0)))
    assert "the due local step did not run" in rules(found)
    done = State(operation=op("reboot", "Succeeded", intent()))
    journal = [*journal_for(state), entry("Succeeded")]
    assert "the due local step did not run" not in rules(check_tick(ledger(), obs(
        2, done, journal=journal, awaiting_boot=waiting, boot_id=NEW_BOOT)))
    # not due (no boot since) or not a tick that loaded the state: nothing to say
    assert "the due local step did not run" not in rules(check_tick(ledger(), obs(
        2, state, awaiting_boot=waiting, boot_id=BOOT)))
    assert "the due local step did not run" not in rules(check_tick(ledger(), obs(
        2, state, awaiting_boot=waiting, boot_id=NEW_BOOT, run=TickRun(-9, 1.0, killed=True))))


def test_local_step_due_needs_a_shutdown_phase_and_a_new_boot() -> None:
    assert local_step_due(op("reboot", "RebootScheduled"), NEW_BOOT)
    assert not local_step_due(op("reboot", "RebootScheduled"), BOOT)
    assert not local_step_due(op("reboot", "Accepted"), NEW_BOOT)
    assert not local_step_due(None, NEW_BOOT)


def test_an_unclipped_message_is_reported() -> None:
    long = "x" * (MAX_MESSAGE + 1)
    hostop = {"metadata": {"uid": "u2"}, "status": {"phase": "Failed", "message": long}}
    assert "message not clipped" in rules(check_tick(ledger(), obs(1, hostop=hostop)))
    block = {"stateError": "", "block": {"code": "execution-state-removed", "message": long}}
    assert "message not clipped" in rules(check_tick(ledger(), obs(1, status_doc=block)))
    clipped = {"metadata": {"uid": "u2"},
               "status": {"phase": "Failed", "message": long[:MAX_MESSAGE - 1] + "…"}}
    assert check_tick(ledger(), obs(1, hostop=clipped)) == []
