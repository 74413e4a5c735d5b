"""systemd's part of a simulated host (sim/systemd.py): a boot drops the transient timers, runs
the boot recovery unit's command when its condition holds and starts the network; a due timer
is unloaded and starts its service's command; `elapse` moves only the host's CLOCK_BOOTTIME."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path

from magicstick_host.sim import systemd
from magicstick_host.sim.clock import SimClock
from magicstick_host.sim.runner import SimRunner
from magicstick_host.sim.writer import create_host, load_host

UNITS = Path(__file__).resolve().parents[2] / "units"
ROLLBACK = "magicstick-host-network-rollback"


class Recorder:
    def __init__(self, code: int = 0) -> None:
        self.calls: list[list[str]] = []
        self.code = code

    def __call__(self, argv: Sequence[str]) -> int:
        self.calls.append(list(argv))
        return self.code


def exec_start(unit: str) -> tuple[str, ...]:
    text = (UNITS / unit).read_text()
    match = re.search(r"^ExecStart=/usr/local/sbin/magicstick-host (.*)$", text, re.M)
    assert match is not None
    return tuple(match.group(1).split())


def test_the_simulated_units_run_what_the_installed_units_run() -> None:
    assert exec_start(systemd.RECOVERY_UNIT) == systemd.RECOVERY_COMMAND
    for unit, command in systemd.TIMER_COMMANDS.items():
        assert command == exec_start(f"{unit}.service")
    text = (UNITS / systemd.RECOVERY_UNIT).read_text()
    condition = re.search(r"^ConditionPathExists=(.*)$", text, re.M)
    assert condition is not None
    assert condition.group(1) == ("/var/lib/magicstick/host-management/"
                                  + systemd.RECOVERY_CONDITION)


def network_host(tmp_path: Path) -> Path:
    root = tmp_path / "host"
    create_host("network-ethernet-dhcp", root)
    return root


def arm(root: Path, seconds: int = 180) -> None:
    result = SimRunner(root).run(["systemd-run", f"--unit={ROLLBACK}",
                                  f"--on-active={seconds}s"], timeout=15)
    assert result.ok, result


def test_a_boot_drops_the_timers_and_runs_the_recovery_only_for_a_trial(tmp_path: Path) -> None:
    root, state = network_host(tmp_path), tmp_path / "state"
    (state / "network").mkdir(parents=True)
    arm(root)
    run = Recorder()
    before = load_host(root).boot_id
    done = systemd.boot(root, state, run)
    assert done.boot_id != before and done.network and done.recovery is None
    assert "ConditionPathExists" in done.skipped and run.calls == []
    assert systemd.armed(root) == {}
    (state / "network" / "trial.json").write_text("{}")
    done = systemd.boot(root, state, run)
    assert run.calls == [["network-recovery", "--root", str(root), "--state-dir", str(state),
                          "--executor", "sim"]]
    assert done.recovery is not None and done.recovery.exit_code == 0
    net = load_host(root).network
    assert net is not None and net.applied_json == net.generated_json != ""  # started
    skipped = systemd.boot(root, None, run)
    assert skipped.recovery is None and "--state-dir" in skipped.skipped and len(run.calls) == 1


def test_a_boot_of_a_host_without_a_network_is_only_a_boot(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    create_host("strix-halo-ubuntu-26.04-ready", root)
    done = systemd.boot(root, None, Recorder())
    assert not done.network and done.skipped == "" and done.recovery is None


def test_a_timer_fires_only_when_due_and_elapse_moves_only_the_boottime(
    tmp_path: Path,
) -> None:
    root, state = network_host(tmp_path), tmp_path / "state"
    arm(root, 180)
    run = Recorder()
    early = systemd.fire_due(root, state, run)
    assert run.calls == [] and 170 < early.pending[ROLLBACK] <= 180
    wall = time.time()
    fired = systemd.fire_due(root, state, run, elapse=True)
    assert 170 < fired.elapsed_s <= 180
    assert run.calls == [["network-rollback", "--root", str(root), "--state-dir", str(state),
                          "--executor", "sim"]]
    assert [f.unit for f in fired.fired] == [f"{ROLLBACK}.service"]
    assert systemd.armed(root) == {}
    net = load_host(root).network
    assert net is not None and ROLLBACK not in net.timers  # elapsed: unloaded
    now = SimClock(root).now()
    assert now.boottime >= time.clock_gettime(time.CLOCK_BOOTTIME) + 170
    assert abs(now.wall.timestamp() - wall) < 60  # the wall clock is the real one
    assert systemd.fire_due(root, state, run).fired == []  # fired once


def test_a_failing_service_reports_its_exit_code(tmp_path: Path) -> None:
    root, state = network_host(tmp_path), tmp_path / "state"
    arm(root, 1)
    fired = systemd.fire_due(root, state, Recorder(75), elapse=True)
    assert [f.exit_code for f in fired.fired] == [75]
