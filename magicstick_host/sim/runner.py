"""The host simulator's command runner: performs effects on a simulated host root.

It stands in for the real machine behind the command-runner port (`--executor sim`). Each
effect it performs is appended to `.magicstick-sim/effects.jsonl` (`sim/effects_log.py`), so
tests count what really happened ("exactly one shutdown", "exactly one playbook run") from the
host's side instead of from mock call lists.

Commands: `systemctl is-active UNIT`, `uname -m`, `shutdown -r|-P +N [text]`, `shutdown -c`,
`ansible-playbook ... prepare.yml|memory.yml|converge.yml -e @vars.json` (`sim/prepare.py`,
`sim/memory.py`, `sim/converge.py`),
and the GPU evidence publisher `/usr/local/sbin/magicstick-gpu-publish` on hosts that have it.
On hosts with a simulated network: `ip`, `iw`, `netplan` and the network trial's timer
(`systemd-run --on-active=`, `systemctl stop <unit>.timer`), in `sim/network.py`.
Anything else exits 127. A tool fault (`sim/faults.py` TOOL_FAULTS) has the next read-only
query answered by a real hostile process through the real runner. A playbook fault may raise
`SimulatedCrash` (`sim/faults.py`): the process running the command died.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from magicstick_host.domain.evidence import GPU_PUBLISHER
from magicstick_host.ports.runner import NOT_FOUND, CommandResult
from magicstick_host.sim import network
from magicstick_host.sim.clock import boottime
from magicstick_host.sim.effects_log import EFFECTS_LOG, read_effects, record
from magicstick_host.sim.faults import (
    GPU_PUBLISH_FAILS,
    HOSTILE_TOOL_ENV,
    SHUTDOWN,
    SimulatedCrash,
    hostile_tool_argv,
    pending_tool_fault,
    read_only_query,
    take_one_shot,
)
from magicstick_host.sim.model import Host, ScheduledShutdown
from magicstick_host.sim.writer import load_host, write_host

__all__ = ["EFFECTS_LOG", "SimRunner", "read_effects"]


class SimRunner:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        stdout_path: str | None = None,
        pass_fds: Sequence[int] = (),  # the simulated playbook runs in this process
    ) -> CommandResult:
        args = tuple(argv)
        host = load_host(self.root)
        fault = pending_tool_fault(host) if read_only_query(args) else None
        if fault is not None:
            return self._hostile_tool(host, args, fault, timeout)
        return self._simulate(host, args, stdout_path, env)

    def _simulate(
        self,
        host: Host,
        args: tuple[str, ...],
        stdout_path: str | None,
        env: Mapping[str, str] | None,
    ) -> CommandResult:
        if args[:2] == ("systemctl", "is-active") and len(args) == 3:
            unit_state = host.units.get(args[2].removesuffix(".service"), "inactive")
            return CommandResult(args, 0 if unit_state == "active" else 3, unit_state + "\n", "")
        if network.handles(host, args):  # ip, iw, netplan, the trial's timer: sim/network.py
            return network.run(self.root, host, args, save=write_host,
                               now_boottime=lambda: boottime(host))
        if args[:2] == ("uname", "-m"):
            return CommandResult(args, 0, host.kernel.arch + "\n", "")
        if args and args[0] == "shutdown":
            return self._shutdown(host, args)
        if args and args[0].rsplit("/", 1)[-1] == "ansible-playbook":
            return self._playbook(host, args, stdout_path, env)
        if args == (GPU_PUBLISHER,) and host.gpu_publisher:
            return self._gpu_publish(host, args)
        return CommandResult(args, NOT_FOUND, "", f"{args[0]}: not simulated")

    def _hostile_tool(
        self, host: Host, args: tuple[str, ...], fault: str, timeout: float
    ) -> CommandResult:
        """The one-shot tool fault `fault` fires: the query is answered by a real hostile
        process (sim/faults.py), run by the real runner with the caller's timeout."""
        import os

        from magicstick_host.ports.runner import RealRunner

        take_one_shot(host, fault)
        write_host(host, self.root)
        record(self.root, host, "fault", args, fault=fault)
        answer = self._simulate(load_host(self.root), args, None, None)
        marker = str(self.root.absolute())
        argv = hostile_tool_argv(fault, marker, answer.stdout, answer.returncode)
        env = {**os.environ, HOSTILE_TOOL_ENV: marker}
        result = RealRunner().run(argv, timeout=timeout, env=env)
        return CommandResult(args, result.returncode, result.stdout, result.stderr)

    def _shutdown(self, host: Host, args: tuple[str, ...]) -> CommandResult:
        if SHUTDOWN in host.faults:
            record(self.root, host, "shutdown-failed", args)
            return CommandResult(args, 1, "", "Failed to call ScheduleShutdown: Access denied")
        if args[1:2] == ("-c",):
            host.shutdown = None
            write_host(host, self.root)
            record(self.root, host, "shutdown-cancelled", args)
            return CommandResult(args, 0, "", "")
        modes = {"-r": "reboot", "-P": "poweroff"}
        if len(args) < 3 or args[1] not in modes or not args[2].startswith("+"):
            return CommandResult(args, 1, "", f"shutdown: unsupported arguments {args[1:]}")
        minutes = int(args[2][1:])
        usec = int((time.time() + 60 * minutes) * 1_000_000)
        host.shutdown = ScheduledShutdown(usec=usec, mode=modes[args[1]])
        write_host(host, self.root)
        record(self.root, host, "shutdown", args)
        return CommandResult(args, 0, "", f"Shutdown scheduled for +{minutes} min\n")

    def _gpu_publish(self, host: Host, args: tuple[str, ...]) -> CommandResult:
        if take_one_shot(host, GPU_PUBLISH_FAILS):
            write_host(host, self.root)
            record(self.root, host, "fault", args, fault=GPU_PUBLISH_FAILS)
            record(self.root, host, "gpu-publish", args, rc=1)
            return CommandResult(args, 1, "", "gpu-publish: the operator API is not reachable\n")
        record(self.root, host, "gpu-publish", args, rc=0)
        return CommandResult(args, 0, "published GPU evidence\n", "")

    def _playbook(
        self,
        host: Host,
        args: tuple[str, ...],
        stdout_path: str | None,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        # the simulated playbooks, imported when one runs (an idle simulated tick runs none)
        from magicstick_host.sim.ansible import PlaybookUsageError, PlayLog, parse_call
        from magicstick_host.sim.converge import run_converge
        from magicstick_host.sim.memory_playbook import initramfs_argv, run_memory
        from magicstick_host.sim.prepare_playbook import run_prepare

        try:
            call = parse_call(args)
        except PlaybookUsageError as exc:
            record(self.root, host, "playbook", args, playbook=None, rc=exc.returncode)
            return self._output(args, exc.returncode, str(exc) + "\n", stdout_path)
        crashed = False
        rebuilt: str | None = None
        try:
            if call.playbook == "converge.yml":  # host convergence (sim/converge.py)
                log, fired = run_converge(host, self.root, call.variables, env)
            elif call.playbook == "prepare.yml":
                outcome = run_prepare(host, call.variables, self._dpkg_lock_holder())
                log, fired, crashed = outcome.log, list(outcome.faults_fired), outcome.crashed
            else:
                log, fired, rebuilt = run_memory(host, call.variables)
        except PlaybookUsageError as exc:
            log, fired = PlayLog("(the play failed before its first task)"), []
            log.lines.append(str(exc))
            log.counts["failed"] += 1
        write_host(host, self.root)
        for fault in fired:
            record(self.root, host, "fault", args, fault=fault)
        if rebuilt is not None:
            record(self.root, host, "initramfs", initramfs_argv(rebuilt))
        if crashed:
            record(self.root, host, "playbook", args, playbook=call.playbook, rc=None,
                   crashed=True)
            self._output(args, 0, log.text(), stdout_path)
            raise SimulatedCrash(f"killed while running {call.playbook}")
        text = log.recap()
        record(self.root, host, "playbook", args, playbook=call.playbook, rc=log.returncode)
        return self._output(args, log.returncode, text, stdout_path)

    def _dpkg_lock_holder(self) -> tuple[str, int] | None:
        """A real process holding a dpkg lock of the simulated root (a test's stand-in for
        unattended-upgrades), as apt would meet it."""
        from magicstick_host.ports.hostfs import HostReadError, RootedHostFS

        fs = RootedHostFS(str(self.root))
        for lock in ("/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock"):
            try:
                pid = fs.lock_holder(lock)
            except HostReadError:
                continue
            if pid is not None:
                return lock, pid
        return None

    @staticmethod
    def _output(
        args: tuple[str, ...], returncode: int, text: str, stdout_path: str | None
    ) -> CommandResult:
        if stdout_path is None:
            return CommandResult(args, returncode, text, "")
        with open(stdout_path, "a", encoding="utf-8") as log:
            log.write(text)
        return CommandResult(args, returncode, "", "")
