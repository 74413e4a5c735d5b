"""domain/convergence/run.py and domain/convergence/gate.py: pure, tested on their own."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from magicstick_host import schemas
from magicstick_host.domain.convergence.gate import GateFacts, Run, Skip, converge_gate
from magicstick_host.domain.convergence.run import (
    MAX_CHANGED_TASKS,
    MAX_MESSAGE,
    REBOOT_TASK,
    ConvergenceRun,
    finish_run,
    journal_entry,
    read_play_log,
    render_convergence,
    start_run,
)
from magicstick_host.domain.evidence import ScheduledShutdown, ServicesInfo
from magicstick_host.domain.phase import TERMINAL_PHASES, Phase
from magicstick_host.domain.state import Block, State
from magicstick_host.domain.state_codec import state_from_json
from magicstick_host.errors import ExitCode
from tests.harness.factories import operation

LOG = """
PLAY [Converge the magicstick base host] ***************************************

TASK [converge : Read the host facts] ******************************************
ok: [localhost]

TASK [nvidia_display : Create the configuration directories] *******************
ok: [localhost] => (item=/etc/modprobe.d)
changed: [localhost] => (item=/etc/modules-load.d)

TASK [nvidia_display : Set the nvidia-drm options (modprobe.d)] ****************
changed: [localhost]

TASK [nvidia_display : Schedule the one reboot after the first convergence] ****
changed: [localhost]

PLAY RECAP *********************************************************************
localhost                  : ok=4    changed=3    unreachable=0    failed=0    skipped=0
"""
FAILED = """
TASK [k3s : Check the K3s version pin] *****************************************
fatal: [localhost]: FAILED! => {"assertion": "x", "changed": false, "msg": "k3s_version \\"stable\\" is not exact: ünïcode"}
"""  # noqa: E501


def test_the_changed_tasks_and_the_reboot() -> None:
    play = read_play_log(LOG)
    assert play.changed_tasks == (
        "nvidia_display : Create the configuration directories: /etc/modules-load.d",
        "nvidia_display : Set the nvidia-drm options (modprobe.d)",
        f"nvidia_display : {REBOOT_TASK}",
    )
    assert play.failed_task is None
    run = start_run(None, at="2026-12-01T10:00:00Z", boot_id="b")
    done = finish_run(run, at="2026-12-01T10:05:00Z", returncode=0, log_text=LOG, log_path="/l")
    assert done.result == "succeeded" and done.reboot_scheduled
    assert done.message == (
        "converged: 3 task(s) changed; the one reboot after the first convergence is scheduled "
        "(+1 min) (log /l)"
    )


def test_a_failure_names_the_task_and_its_message() -> None:
    play = read_play_log(FAILED)
    assert play.failed_task == "k3s : Check the K3s version pin"
    assert play.failure == 'k3s_version "stable" is not exact: ünïcode'
    run = start_run(None, at="t0", boot_id="b")
    done = finish_run(run, at="t1", returncode=2, log_text=FAILED, log_path="/l")
    assert done.result == "failed" and not done.reboot_scheduled
    assert "the task 'k3s : Check the K3s version pin' failed: k3s_version" in done.message
    crashed = finish_run(run, at="t1", returncode=124, log_text="", log_path="/l",
                         runner_note="timed out after 1800 s\n")
    assert crashed.message == (
        "convergence failed: ansible-playbook exited 124 (timed out after 1800 s) (log /l)")


def test_long_runs_are_bounded_and_stay_valid() -> None:
    log = "".join(f"TASK [t{i}] ***\nchanged: [localhost]\n" for i in range(200))
    log += 'TASK [x] ***\nfatal: [localhost]: FAILED! => {"msg": "' + "m" * 5000 + '"}\n'
    done = finish_run(start_run(None, at="t0", boot_id="b"), at="t1", returncode=2,
                      log_text=log, log_path="/l")
    assert len(done.changed_tasks) == MAX_CHANGED_TASKS
    assert done.changed_tasks[-1] == "… and 151 more"
    assert len(done.message) == MAX_MESSAGE
    doc = State(convergence=done).to_json()
    assert schemas.errors("state", doc) == []
    assert state_from_json(doc).convergence == done


def test_journal_entries_are_valid_and_say_what_happened() -> None:
    run = start_run(None, at="t0", boot_id="b")
    started = {**journal_entry(run), "seq": 1}
    assert started["event"] == "converge-started" and schemas.errors("journal", started) == []
    done = finish_run(run, at="t1", returncode=0, log_text=LOG, log_path="/l")
    finished = {**journal_entry(done), "seq": 2}
    assert finished["event"] == "converge-finished" and finished["outcome"] == "succeeded"
    assert finished["changedTasks"] == list(done.changed_tasks) and finished["at"] == "t1"
    assert schemas.errors("journal", finished) == []


def test_a_run_without_an_end_is_noted_by_the_next() -> None:
    left = start_run(None, at="t0", boot_id="b")
    nxt = start_run(left, at="t9", boot_id="b2")
    assert "the previous run (started t0) recorded no end" in nxt.message
    done = finish_run(left, at="t1", returncode=0, log_text="", log_path="/l")
    assert "recorded no end" not in start_run(done, at="t2", boot_id="b").message
    assert render_convergence(left.to_json())[0].startswith("Converge:   started t0, no end")
    assert render_convergence(None) == [
        "Converge:   never run on this host (magicstick-host converge)"]


@given(st.text(max_size=2000))
def test_any_log_text_reads_without_raising(text: str) -> None:
    play = read_play_log(text)
    tasks = {line[6:line.rfind("]")] for line in text.splitlines() if line.startswith("TASK [")}
    for changed in play.changed_tasks:
        assert changed == "?" or changed.split(": ")[0] in tasks or any(
            changed.startswith(t) for t in tasks)


@given(st.lists(st.sampled_from(["TASK [a] ***", "changed: [h]", "fatal: [h]: FAILED! => [[[",
                                  'fatal: [h]: FAILED! => {"msg": 1}', "ok: [h]", ""]),
                max_size=40))
def test_garbled_failures_never_raise(lines: list[str]) -> None:
    done = finish_run(start_run(None, at="t0", boot_id="b"), at="t1", returncode=2,
                      log_text="\n".join(lines), log_path="/l")
    assert schemas.errors("state", State(convergence=done).to_json()) == []


# --- the gate ----------------------------------------------------------------------------------

PHASES = [str(p) for p in Phase]


@given(
    phase=st.one_of(st.none(), st.sampled_from(PHASES)),
    blocked=st.booleans(),
    state_error=st.sampled_from(["", "corrupt"]),
    shutdown=st.booleans(),
    ci_present=st.booleans(),
    ci_finished=st.sampled_from([True, False, None]),
)
def test_the_gate_runs_only_when_everything_allows_it(
    phase: str | None, blocked: bool, state_error: str, shutdown: bool, ci_present: bool,
    ci_finished: bool | None,
) -> None:
    state = State(
        operation=None if phase is None else operation("prepare-gpu", phase, boot_id="b"),
        block=Block("state-corrupt", "m", "t") if blocked else None,
    )
    services = ServicesInfo(
        cloud_init_finished=ci_finished, cloud_init_present=ci_present,
        shutdown_scheduled=ScheduledShutdown("reboot", 1) if shutdown else None,
    )
    decision = converge_gate(GateFacts(state, state_error, services))
    active = phase is not None and phase not in TERMINAL_PHASES
    allowed = (not state_error and not blocked and not active and not shutdown
               and (not ci_present or ci_finished is True))
    assert isinstance(decision, Run) is allowed
    if isinstance(decision, Skip):
        expected: dict[str, Any] = {
            "worker-blocked": ExitCode.STATE_BLOCKED, "operation-active": ExitCode.BUSY,
            "shutdown-scheduled": ExitCode.WAITING, "cloud-init": ExitCode.WAITING}
        assert decision.exit_code == expected[decision.reason]
        assert decision.message


def test_an_unknown_cloud_init_result_waits() -> None:
    decision = converge_gate(GateFacts(None, "", ServicesInfo(cloud_init_finished=None)))
    assert isinstance(decision, Skip) and decision.exit_code == ExitCode.WAITING
    assert "cannot be read" in decision.message


def test_a_fresh_host_without_state_runs() -> None:
    services = ServicesInfo(cloud_init_finished=True)
    assert isinstance(converge_gate(GateFacts(None, "", services)), Run)
    assert ConvergenceRun("t", "b").result == "running"
