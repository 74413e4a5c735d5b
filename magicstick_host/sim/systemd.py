"""systemd's part of a simulated host with a network: what a boot does before and after the
units run, and the transient timers elapsing (`sim boot`, `sim timers`, `sim fire-timers`).

A boot (`boot`):
1. the host starts again (sim/boot.py: a new boot ID, /run emptied, the newest kernel...);
   a power loss and an orderly restart boot alike;
2. the transient timers are gone (they lived in /run), and systemd's netplan generator renders
   /etc/netplan before any unit runs (sim/network.py `boot_network`);
3. magicstick-host-network-recovery.service runs, when its `ConditionPathExists=` holds (the
   trial record in the state directory): its ExecStart's command (`RECOVERY_COMMAND`) through
   the real command line with `--executor sim`;
4. the network starts on what netplan last generated (sim/network.py `start_network`).

A timer (`fire_due`): once an armed transient timer is due by the host's CLOCK_BOOTTIME
(sim/clock.py), systemd unloads it and starts its service: the command of that service's
ExecStart (`TIMER_COMMANDS`), through the real command line. `elapse` first lets the time pass
until the next one is due (it moves the host's CLOCK_BOOTTIME, never the wall clock).

The commands run through `run` (argv → exit code), which the caller provides: the command
line's own entry point (cli/sim_cmd.py), so this module imports nothing of the CLI. What those
units do to the host is in the effects log like any effect (the soak counts them apart).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from magicstick_host.lite_dataclasses import dataclass, field
from magicstick_host.sim.boot import boot_host
from magicstick_host.sim.clock import boottime
from magicstick_host.sim.network import boot_network, start_network
from magicstick_host.sim.writer import load_host, write_host

# what the installed units' ExecStart runs (units/*.service; tests/sim/test_systemd.py holds
# these to the unit files)
RECOVERY_UNIT = "magicstick-host-network-recovery.service"
RECOVERY_COMMAND = ("network-recovery",)
# ConditionPathExists= of the recovery unit, under the state directory
RECOVERY_CONDITION = "network/trial.json"
TIMER_COMMANDS = {"magicstick-host-network-rollback": ("network-rollback",)}

Run = Callable[[Sequence[str]], int]


@dataclass(frozen=True)
class UnitRun:
    unit: str
    argv: tuple[str, ...]
    exit_code: int


@dataclass
class BootResult:
    boot_id: str
    network: bool
    # the recovery unit, when it ran; why not, when it did not
    recovery: UnitRun | None = None
    skipped: str = ""


@dataclass
class TimersResult:
    fired: list[UnitRun] = field(default_factory=list)
    elapsed_s: float = 0.0
    # unit -> seconds until it is due, for those still armed
    pending: dict[str, float] = field(default_factory=dict)


def _argv(command: Sequence[str], root: Path, state_dir: Path) -> list[str]:
    return [*command, "--root", str(root), "--state-dir", str(state_dir), "--executor", "sim"]


def boot(root: Path, state_dir: Path | None, run: Run) -> BootResult:
    """The host at `root` boots; `state_dir`: the worker's (where the boot recovery finds the
    trial); None: the recovery unit cannot run (no state directory was given)."""
    root = Path(root)
    boot_id = boot_host(root)
    host = load_host(root)
    if host.network is None:
        return BootResult(boot_id, network=False)
    boot_network(host)
    write_host(host, root)
    result = BootResult(boot_id, network=True)
    if state_dir is None:
        result.skipped = "no --state-dir given, so the boot recovery unit was not run"
    elif not (Path(state_dir) / RECOVERY_CONDITION).is_file():
        result.skipped = f"no {RECOVERY_CONDITION} in the state directory (ConditionPathExists)"
    else:
        argv = _argv(RECOVERY_COMMAND, root, Path(state_dir))
        result.recovery = UnitRun(RECOVERY_UNIT, tuple(argv), run(argv))
    host = load_host(root)
    start_network(host)
    write_host(host, root)
    return result


def armed(root: Path) -> dict[str, float]:
    """The armed transient timers: unit -> seconds until due (<= 0: due)."""
    host = load_host(Path(root))
    net = host.network
    if net is None:
        return {}
    now = boottime(host)
    return {unit: net.timers_due.get(unit, now) - now for unit in sorted(net.timers)}


def fire_due(root: Path, state_dir: Path, run: Run, *, elapse: bool = False) -> TimersResult:
    """Fire every armed timer that is due (after letting the time pass to the next one, with
    `elapse`): unload it, then run its service's command."""
    root = Path(root)
    result = TimersResult()
    waits = list(armed(root).values())
    if elapse and waits and min(waits) > 0:
        host = load_host(root)
        host.boottime_offset_s += min(waits)
        write_host(host, root)
        result.elapsed_s = min(waits)
    for unit, wait in armed(root).items():
        if wait > 0:
            result.pending[unit] = wait
            continue
        host = load_host(root)
        assert host.network is not None
        host.network.timers.pop(unit, None)  # elapsed: a transient timer is unloaded
        host.network.timers_due.pop(unit, None)
        write_host(host, root)
        command = TIMER_COMMANDS.get(unit)
        if command is None:  # a timer of no installed unit: systemd starts nothing that works
            result.fired.append(UnitRun(f"{unit}.service", (), 5))
            continue
        argv = _argv(command, root, Path(state_dir))
        result.fired.append(UnitRun(f"{unit}.service", tuple(argv), run(argv)))
    return result
