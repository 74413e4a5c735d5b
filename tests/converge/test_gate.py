"""`magicstick-host converge`: the gate it shares with the worker, on simulated hosts.

The lock is the real maintenance lock (flock on the state directory's maintenance.lock), the
state is read through the real state store, the playbook is the simulator's converge.yml
(sim/converge.py) run through the command-runner port. What happened is read from the host's
effects log, the journal and `status`, never from call lists.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from magicstick_host import app, app_console, schemas
from magicstick_host.cli.converge_cmd import build_converge_deps, converge_command
from magicstick_host.converge import ConvergeDeps, ConvergeResult, run_converge
from magicstick_host.domain.operations.prepare_gpu.data import PrepareData
from magicstick_host.domain.state import Block, Operation, State
from magicstick_host.errors import ExitCode
from magicstick_host.ports.runner import CommandResult
from magicstick_host.ports.state_store import FileStateStore
from magicstick_host.sim.converge import CONVERGE_FAILS, CONVERGE_HOLD, release_converge
from magicstick_host.sim.effects_log import read_effects
from magicstick_host.sim.faults import SimulatedCrash
from magicstick_host.sim.model import Host, ScheduledShutdown
from magicstick_host.sim.writer import create_host, load_host, write_host
from tests.harness.factories import operation

NVIDIA_HOST = "strix-halo-nvidia-ubuntu-26.04-ready"
CPU_HOST = "cpu-only-ubuntu-24.04"


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "state"
    directory.mkdir(mode=0o700)
    return directory


def sim_root(tmp_path: Path, scenario: str = NVIDIA_HOST,
             change: Callable[[Host], None] | None = None) -> Path:
    root = tmp_path / "host"
    create_host(scenario, root)
    if change is not None:
        host = load_host(root)
        change(host)
        write_host(host, root)
    return root


def deps(root: Path, state_dir: Path) -> ConvergeDeps:
    return build_converge_deps(root=str(root), state_dir=str(state_dir), executor="sim")


def converge(root: Path, state_dir: Path) -> ConvergeResult:
    return run_converge(deps(root, state_dir))


def playbook_runs(root: Path) -> list[dict[str, object]]:
    return [e for e in read_effects(root) if e["effect"] == "playbook"]


def journal(state_dir: Path) -> list[dict[str, Any]]:
    return FileStateStore(state_dir).read_journal()


def status(state_dir: Path) -> dict[str, Any]:
    doc = app_console.status_document(str(state_dir), "magicstick")
    assert schemas.errors("status", doc) == []
    return doc


def prepare_gpu(phase: str) -> Operation:
    """A GPU preparation in `phase`, with the data record the store requires of one."""
    data = PrepareData(
        packages={"linux-generic": "7.0.0-10.10"}, target_kernel="7.0.0-10-generic",
        reboot_required=True, gpu_profile="strix-halo", profile_id="strix-halo-ubuntu-26.04",
        profile_version="1", os_version_id="26.04", experiment=False,
        engine_validation_available=True, module_identity=None, install_done=False,
    )
    return operation("prepare-gpu", phase, boot_id="b", data=data)


def save_state(state_dir: Path, state: State) -> None:
    FileStateStore(state_dir).save(state)


# --- runs ---------------------------------------------------------------------------------------


def test_an_idle_host_converges_and_status_shows_the_run(tmp_path: Path, state_dir: Path) -> None:
    root = sim_root(tmp_path)
    first = converge(root, state_dir)
    assert first.exit_code == ExitCode.OK, first.summary
    assert [e["playbook"] for e in playbook_runs(root)] == ["converge.yml"]
    run = status(state_dir)["convergence"]
    assert run["result"] == "succeeded" and run["finishedAt"] and run["startedAt"]
    assert run["changedTasks"] == ["nvidia_display : Load nvidia-drm early with the console"]
    assert "1 task(s) changed" in run["message"]
    events = [(e["event"], e["seq"]) for e in journal(state_dir)]
    assert events == [("converge-started", 1), ("converge-finished", 2)]
    finished = journal(state_dir)[-1]
    assert finished["outcome"] == "succeeded" and finished["changedTasks"] == run["changedTasks"]

    second = converge(root, state_dir)
    assert second.exit_code == ExitCode.OK
    assert len(playbook_runs(root)) == 2
    run = status(state_dir)["convergence"]
    assert run["changedTasks"] == [] and "nothing changed" in run["message"]
    rendered = app_console.status_document(str(state_dir), "magicstick")
    from magicstick_host.domain.status_view import render_status

    assert "Converge:   succeeded" in render_status(rendered)


def test_the_run_keeps_the_worker_state(tmp_path: Path, state_dir: Path) -> None:
    root = sim_root(tmp_path)
    done = replace(operation("reboot", "Succeeded", boot_id="b"), message="done")
    save_state(state_dir, State(operation=done, last_report_at="2026-11-30T12:00:00Z"))
    assert converge(root, state_dir).exit_code == ExitCode.OK
    state = FileStateStore(state_dir).load()
    assert state is not None and state.operation == done
    assert state.last_report_at == "2026-11-30T12:00:00Z"
    assert state.convergence is not None and state.convergence.result == "succeeded"


def test_compute_gpus_get_nothing_from_the_simulated_playbook(
    tmp_path: Path, state_dir: Path
) -> None:
    """2x H200 (3D controllers) are no display host: no nvidia-drm file, nothing changed."""
    root = sim_root(tmp_path, "nvidia-datacenter-ubuntu-24.04")
    assert converge(root, state_dir).exit_code == ExitCode.OK
    assert status(state_dir)["convergence"]["changedTasks"] == []
    assert "etc/modprobe.d/90-magicstick-nvidia-drm.conf" not in load_host(root).modprobe_files


def test_a_failed_playbook_is_recorded_with_its_task(tmp_path: Path, state_dir: Path) -> None:
    root = sim_root(tmp_path, change=lambda h: h.faults.append(CONVERGE_FAILS))
    result = converge(root, state_dir)
    assert result.exit_code == ExitCode.EFFECT_FAILED
    run = status(state_dir)["convergence"]
    assert run["result"] == "failed"
    assert "the task 'k3s : Check the K3s version pin' failed" in run["message"]
    assert "simulated convergence failure" in run["message"]
    assert journal(state_dir)[-1]["outcome"] == "failed"


def test_a_run_killed_half_way_stays_started_and_the_next_says_so(
    tmp_path: Path, state_dir: Path
) -> None:
    root = sim_root(tmp_path)
    d = deps(root, state_dir)
    inner = d.runner

    class Dies:
        def run(self, argv: Sequence[str], *, timeout: float,
                env: Mapping[str, str] | None = None, stdout_path: str | None = None,
                pass_fds: Sequence[int] = ()) -> CommandResult:
            raise SimulatedCrash("killed while running converge.yml")

    d.runner = Dies()
    with pytest.raises(SimulatedCrash):
        run_converge(d)
    run = status(state_dir)["convergence"]
    assert run["result"] == "running" and run["finishedAt"] == ""
    assert [e["event"] for e in journal(state_dir)] == ["converge-started"]
    # the lock went with the process: the next run is not blocked by it
    d.runner = inner
    assert run_converge(d).exit_code == ExitCode.OK
    started = [e for e in journal(state_dir) if e["event"] == "converge-started"]
    assert "recorded no end" in started[-1]["message"]


# --- the lock -----------------------------------------------------------------------------------

HOLDER = """
import sys, time
from pathlib import Path
from magicstick_host.ports.lock import MaintenanceLock
with MaintenanceLock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def lock_held_by_another_process(state_dir: Path) -> Iterator[None]:
    """The maintenance lock held by another process exactly the way the tick takes it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(state_dir / "maintenance.lock")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    yield
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=30)


@pytest.mark.real_commands  # a second python process holds the lock
@pytest.mark.usefixtures("lock_held_by_another_process")
def test_a_held_lock_skips_quietly_with_busy(tmp_path: Path, state_dir: Path) -> None:
    root = sim_root(tmp_path)
    result = converge(root, state_dir)
    assert result.exit_code == ExitCode.BUSY and result.quiet
    assert playbook_runs(root) == [] and journal(state_dir) == []
    cli = CliRunner().invoke(
        converge_command, ["--root", str(root), "--state-dir", str(state_dir),
                           "--executor", "sim"], standalone_mode=False)
    assert cli.return_value == int(ExitCode.BUSY) and cli.output == ""


def tick_deps(root: Path, state_dir: Path, gather: Callable[[], Any]) -> Any:
    from magicstick_host.ports.clock import RealClock
    from magicstick_host.sim.runner import SimRunner

    deps = app.tick_deps(
        root=str(root), runner=SimRunner(root), clock=RealClock(), kube=None,
        state_dir=state_dir, profiles=app.profiles_from(None), node_name="magicstick",
        playbooks_dir=app.default_playbooks_dir(),
    )
    return replace(deps, gather=gather)


def test_a_running_tick_makes_convergence_skip(tmp_path: Path, state_dir: Path) -> None:
    """A real tick holds the lock while it runs (here: while it collects evidence)."""
    root = sim_root(tmp_path)
    collecting, release = threading.Event(), threading.Event()
    profiles = app.profiles_from(None)

    def slow_gather() -> Any:
        collecting.set()
        assert release.wait(30)
        return app.gather(str(root), profiles)

    results: list[Any] = []
    tick = threading.Thread(
        target=lambda: results.append(app.tick(tick_deps(root, state_dir, slow_gather))))
    tick.start()
    try:
        assert collecting.wait(30)
        result = converge(root, state_dir)
    finally:
        release.set()
        tick.join(60)
    assert result.exit_code == ExitCode.BUSY and result.quiet
    assert playbook_runs(root) == []
    assert results and results[0].exit_code != ExitCode.BUSY  # the tick itself went on
    assert status(state_dir)["convergence"] is None


def test_a_running_convergence_makes_the_tick_busy(tmp_path: Path, state_dir: Path) -> None:
    root = sim_root(tmp_path, change=lambda h: h.faults.append(CONVERGE_HOLD))
    results: list[ConvergeResult] = []
    worker = threading.Thread(target=lambda: results.append(converge(root, state_dir)))
    worker.start()
    try:
        started = state_dir / "journal.jsonl"
        for _ in range(600):
            if started.exists() and "converge-started" in started.read_text():
                break
            threading.Event().wait(0.05)
        profiles = app.profiles_from(None)
        tick = app.tick(tick_deps(root, state_dir, lambda: app.gather(str(root), profiles)))
        assert tick.exit_code == ExitCode.BUSY
        assert status(state_dir)["convergence"]["result"] == "running"
    finally:
        release_converge(root)
        worker.join(60)
    assert results[0].exit_code == ExitCode.OK


# --- the skip conditions ------------------------------------------------------------------------


@pytest.mark.parametrize("phase", ["Accepted", "Preparing", "RebootScheduled", "Verifying",
                                   "Registering", "AwaitingConfirmation"])
def test_an_active_operation_skips_with_busy(tmp_path: Path, state_dir: Path, phase: str) -> None:
    root = sim_root(tmp_path)
    before = State(operation=prepare_gpu(phase))
    save_state(state_dir, before)
    result = converge(root, state_dir)
    assert result.exit_code == ExitCode.BUSY and not result.quiet
    assert f"prepare-gpu (request {'a' * 32}) is in phase {phase}" in result.summary
    assert playbook_runs(root) == [] and journal(state_dir) == []
    assert FileStateStore(state_dir).load() == before


@pytest.mark.parametrize("phase", ["Succeeded", "Failed", "Rejected", "Interrupted",
                                   "RolledBack", "PreparedUnverified"])
def test_a_finished_operation_does_not_hold_convergence_back(
    tmp_path: Path, state_dir: Path, phase: str
) -> None:
    root = sim_root(tmp_path)
    save_state(state_dir, State(operation=prepare_gpu(phase)))
    assert converge(root, state_dir).exit_code == ExitCode.OK


def test_a_blocked_worker_skips_with_state_blocked(tmp_path: Path, state_dir: Path) -> None:
    root = sim_root(tmp_path)
    block = Block("execution-state-removed", "the HostOperation was deleted", "2026-11-30T12:00Z")
    save_state(state_dir, State(block=block))
    result = converge(root, state_dir)
    assert result.exit_code == ExitCode.STATE_BLOCKED
    assert "the host worker is stopped (the HostOperation was deleted)" in result.summary
    assert playbook_runs(root) == []


def test_a_corrupt_state_skips_with_state_blocked(tmp_path: Path, state_dir: Path) -> None:
    root = sim_root(tmp_path)
    (state_dir / "state.json").write_text("{not json")
    (state_dir / "state.json").chmod(0o600)
    result = converge(root, state_dir)
    assert result.exit_code == ExitCode.STATE_BLOCKED
    assert "cannot be used" in result.summary and "corrupt" in result.summary
    assert playbook_runs(root) == []
    # exactly what the tick would have done: moved aside and blocked
    assert status(state_dir)["block"]["code"] == "state-corrupt"


def test_a_scheduled_shutdown_skips_with_waiting(tmp_path: Path, state_dir: Path) -> None:
    root = sim_root(tmp_path, change=lambda h: setattr(
        h, "shutdown", ScheduledShutdown(usec=1_900_000_000_000_000)))
    result = converge(root, state_dir)
    assert result.exit_code == ExitCode.WAITING
    assert "reboot is scheduled" in result.summary
    assert playbook_runs(root) == [] and journal(state_dir) == []


def test_an_unreadable_shutdown_marker_still_skips(tmp_path: Path, state_dir: Path) -> None:
    root = sim_root(tmp_path)
    marker = root / "run/systemd/shutdown/scheduled"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.mkdir()  # present, but not a file that can be read
    result = converge(root, state_dir)
    assert result.exit_code == ExitCode.WAITING and "a shutdown is scheduled" in result.summary
    assert playbook_runs(root) == []


@pytest.mark.parametrize("ci_state", ["running", "none"])
def test_cloud_init_not_finished_waits(tmp_path: Path, state_dir: Path, ci_state: str) -> None:
    root = sim_root(tmp_path, change=lambda h: setattr(h.cloud_init, "state", ci_state))
    result = converge(root, state_dir)
    assert result.exit_code == ExitCode.WAITING
    assert "cloud-init's base installation has not finished" in result.summary
    assert playbook_runs(root) == [] and journal(state_dir) == []


def test_a_host_without_cloud_init_converges(tmp_path: Path, state_dir: Path) -> None:
    root = sim_root(tmp_path, CPU_HOST, lambda h: setattr(h.cloud_init, "installed", False))
    result = converge(root, state_dir)
    assert result.exit_code == ExitCode.OK
    run = status(state_dir)["convergence"]
    assert run["changedTasks"] == []  # a CPU-only host skips the NVIDIA role


def test_the_playbook_refuses_to_run_without_the_lock_descriptor(
    tmp_path: Path, state_dir: Path
) -> None:
    """The simulated playbook, like the real one, requires MAGICSTICK_CONVERGE_LOCK_FD."""
    from magicstick_host.sim.runner import SimRunner

    root = sim_root(tmp_path)
    result = SimRunner(root).run(
        ["ansible-playbook", "-i", "localhost,", "-c", "local", "converge.yml"], timeout=60)
    assert result.returncode == 2
    assert "MAGICSTICK_CONVERGE_LOCK_FD is not set" in result.stdout


def test_the_command_line(tmp_path: Path, state_dir: Path) -> None:
    root = sim_root(tmp_path)
    args = ["--root", str(root), "--state-dir", str(state_dir), "--executor", "sim"]
    ok = CliRunner().invoke(converge_command, args, standalone_mode=False)
    assert ok.return_value == 0 and "converged: 1 task(s) changed" in ok.output
    host = load_host(root)
    host.cloud_init.state = "running"
    write_host(host, root)
    waiting = CliRunner().invoke(converge_command, args, standalone_mode=False)
    assert waiting.return_value == int(ExitCode.WAITING)
    assert "waiting: cloud-init" in waiting.output
    real = CliRunner().invoke(converge_command, [*args[:4], "--executor", "real"],
                              standalone_mode=False)
    assert real.exception is not None and "needs --root /" in str(real.exception)


def test_the_entry_point_runs_converge_with_the_documented_exit_codes(
    tmp_path: Path, state_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from magicstick_host.cli.main import main

    root = sim_root(tmp_path)
    args = ["converge", "--root", str(root), "--state-dir", str(state_dir), "--executor", "sim"]
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert "converged: 1 task(s) changed" in out and err == ""
    block = Block("execution-state-removed", "the HostOperation was deleted", "2026-11-30T12:00Z")
    save_state(state_dir, replace(FileStateStore(state_dir).load() or State(), block=block))
    assert main(args) == int(ExitCode.STATE_BLOCKED)
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "the host worker is stopped" in err
    assert len(playbook_runs(root)) == 1


@pytest.mark.real_commands  # a second python process holds the lock
@pytest.mark.usefixtures("lock_held_by_another_process")
def test_the_entry_point_is_silent_when_busy(
    tmp_path: Path, state_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from magicstick_host.cli.main import main

    root = sim_root(tmp_path)
    code = main(["converge", "--root", str(root), "--state-dir", str(state_dir),
                 "--executor", "sim"])
    assert code == int(ExitCode.BUSY)
    assert capsys.readouterr() == ("", "")
