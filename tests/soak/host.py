"""One simulated host of the soak: its root, state directory, Node, proxy, and the real CLI.

The tick and `status --json` run as subprocesses of the installed `magicstick-host`, exactly as
the systemd unit runs them (with `--executor sim` on the simulated root). A tick may be
SIGKILLed at a moment `tests/soak/kills.py` picks; and it is always killed at the hard limit,
which is itself a violation.

Boots and timers are driven from the CLI alone, as an administrator (or the hostile suite)
would drive a trial through power loss: `magicstick-host sim boot ROOT --state-dir S` (on a
host with a network, systemd's part follows: netplan's generator, the network-recovery unit
when the trial record is there, the network starting; sim/systemd.py), and, while the trial's
rollback timer is armed, `magicstick-host sim fire-timers ROOT --state-dir S` (it starts
`network-rollback` once the timer is due by the host's CLOCK_BOOTTIME). What those units do to
the host is the product's way back from a trial, not a step of a request: their lines of the
effects log are counted apart (`systemd_effects`), never as a tick's effects.

Each tick runs as the unit runs it, with $RUNTIME_DIRECTORY (a root 0700 directory of the
host's, emptied at every boot, as /run is), so the worker's memos are really written and used;
a tick may get another one instead (a planted memo: tests/soak/hostile.py). The tick is started
through the hostile suite's small launcher (tests/hostile/rig.py), whose wait4 gives the tick's
own peak RSS (not the soak's, which a forked child would inherit). One host may have a state
directory path of about 2 kB (`long_state_path`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from magicstick_host.ports.kube import hostoperation_name
from magicstick_host.sim.writer import create_host, load_host, write_host
from tests.harness.command import magicstick_command
from tests.hostile.proxy import Recorder
from tests.hostile.rig import LAUNCHER
from tests.soak.invariants import KILLED, TickRun
from tests.soak.kills import KillWatch
from tests.soak.observe import EffectsTail
from tests.soak.proxy import FaultProxy
from tests.soak.schedule import Kill

EXE = magicstick_command()
# captured at import: the test suite's subprocess guard patches subprocess.Popen per test
_POPEN = subprocess.Popen
STATUS_TIMEOUT_S = 30.0
SYSTEMD_UNIT_TIMEOUT_S = 120.0
ROLLBACK_UNIT = "magicstick-host-network-rollback"  # effects/network.py
# how `sim boot` / `sim fire-timers` name a unit they ran (cli/sim_cmd.py, sim/systemd.py)
RECOVERY_RAN = "magicstick-host-network-recovery.service: `"
ROLLBACK_RAN = f"{ROLLBACK_UNIT}.service: `"
# the Node's InternalIP of a network scenario: its cluster address (sim/network_scenarios.py)
CLUSTER_ADDRESSES = {"network-ethernet-dhcp": "192.168.1.50"}
LONG_PATH_BYTES = 2048  # the state directory path of a `long_state_path` host, about
Json = dict[str, Any]


class SoakHost:
    def __init__(self, work: Path, key: str, name: str, scenario: str, cluster: Any,
                 proxy: FaultProxy, kubeconfig: Path, *, long_state_path: bool = False) -> None:
        # `key` ("host-0") names the host in the fault schedule: stable across runs
        self.key, self.name, self.scenario = key, name, scenario
        self.work, self.generation = work, 0
        self.cluster, self.proxy, self.kubeconfig = cluster, proxy, kubeconfig
        self.long_state_path = long_state_path
        # where a planted memo points: it must never receive a byte
        self.decoy = Recorder()
        self.decoy.__enter__()
        self._install()

    def close(self) -> None:
        self.decoy.__exit__(None, None, None)

    @property
    def tool_marker(self) -> str:
        """HOSTILE_TOOL_ENV's value in this host's hostile tool processes (sim/faults.py)."""
        return str(self.root.absolute())

    @property
    def runs_queries(self) -> bool:
        """An idle tick runs read-only queries here (ip on a network host, systemctl is-active
        on an NVIDIA host), so an armed tool fault fires soon."""
        return self.network or "nvidia" in self.scenario

    def clear_runtime(self) -> None:
        """/run is a tmpfs: a boot empties the unit's runtime directory."""
        import shutil

        shutil.rmtree(self.runtime, ignore_errors=True)
        self.runtime.mkdir(mode=0o700, parents=True)
        os.chmod(self.runtime, 0o700)

    def _install(self) -> None:
        """A freshly installed machine: its scenario's root, an empty state directory, and a
        Node registered by its new kubelet (a new UID, so a new HostOperation name)."""
        gen = self.work / f"gen-{self.generation}"
        self.root, self.state_dir = gen / "host", gen / "state"
        if self.long_state_path:  # nested directories of 200 characters, to about 2 kB
            while len(str(self.state_dir)) < LONG_PATH_BYTES - 200:
                self.state_dir = self.state_dir / ("d" * 199)
            self.state_dir = self.state_dir / ("s" * (LONG_PATH_BYTES - len(str(self.state_dir))
                                                      - 1))
        self.runtime = gen / "runtime"
        self.clear_runtime()
        create_host(self.scenario, self.root)
        host = load_host(self.root)
        node = self.cluster.create_node(self.name, boot_id=host.boot_id,
                                        kernel=host.kernel.release)
        self.node_uid: str = node["metadata"]["uid"]
        address = CLUSTER_ADDRESSES.get(self.scenario)
        if address is not None:
            code, body = self.cluster.request(
                "PATCH", f"/api/v1/nodes/{self.name}/status",
                {"status": {"addresses": [{"type": "InternalIP", "address": address}]}},
                content_type="application/merge-patch+json")
            if code != 200:
                raise AssertionError(f"Node {self.name} address: HTTP {code}: {body!r:.300}")
        self.request_name = hostoperation_name(self.node_uid)
        self.effects = EffectsTail(self.root)
        self.kubelet_behind = False
        self.systemd_effects: list[Json] = []  # of network-recovery / network-rollback
        self.recovery_ran = False  # at the last boot

    def reimage(self) -> None:
        """The administrator reinstalls the machine: everything local is new, and the Node is
        deleted and registered again."""
        code, body = self.cluster.request("DELETE", f"/api/v1/nodes/{self.name}")
        if code not in (200, 202):
            raise AssertionError(f"deleting Node {self.name}: HTTP {code}: {body!r:.300}")
        self.generation += 1
        self._install()

    # -- the simulated machine ----------------------------------------------------------------

    @property
    def boot_id(self) -> str:
        return load_host(self.root).boot_id

    def shutdown_scheduled(self) -> Any:
        return load_host(self.root).shutdown

    def boot(self, *, kubelet_lag: bool) -> str:
        """The host starts again (`sim boot`); the kubelet reports it now, or a tick later."""
        out = self._sim_cli("network-recovery", ["sim", "boot", str(self.root), "--state-dir",
                                                 str(self.state_dir)], RECOVERY_RAN)
        self.recovery_ran = RECOVERY_RAN in out
        new = load_host(self.root).boot_id
        self.clear_runtime()
        self.kubelet_behind = True
        if not kubelet_lag:
            self.kubelet_catch_up()
        return new

    @property
    def network(self) -> bool:
        return load_host(self.root).network is not None

    def fire_rollback_timer(self) -> bool:
        """While the trial's transient timer is armed: `sim fire-timers`, which unloads it and
        starts the rollback service once it is due."""
        host = load_host(self.root)
        if host.network is None or ROLLBACK_UNIT not in host.network.timers:
            return False
        out = self._sim_cli("network-rollback", ["sim", "fire-timers", str(self.root),
                                                 "--state-dir", str(self.state_dir)],
                            ROLLBACK_RAN)
        return ROLLBACK_RAN in out

    def _sim_cli(self, unit: str, args: list[str], ran: str) -> str:
        """Run `magicstick-host <args>`; when it says it ran `unit`'s service (`ran`), the new
        lines of the effects log are that unit's. Its output."""
        proc = subprocess.run([EXE, *args], capture_output=True, timeout=SYSTEMD_UNIT_TIMEOUT_S,
                              check=False, stdin=subprocess.DEVNULL, text=True)
        out = proc.stdout + proc.stderr
        if proc.returncode not in (0,) and ran not in out:
            raise AssertionError(f"magicstick-host {' '.join(args[:2])}: exit "
                                 f"{proc.returncode}: {out[-600:]}")
        if ran in out:
            for effect in self.effects.new():
                self.systemd_effects.append({**effect, "unit": unit, "exit": proc.returncode,
                                             "output": out[-300:]})
        return out

    def kubelet_catch_up(self) -> None:
        if not self.kubelet_behind:
            return
        host = load_host(self.root)
        # a restarted kubelet reports afresh: no device plugin has registered a GPU yet
        self.cluster.set_node_info(self.name, boot_id=host.boot_id, kernel=host.kernel.release,
                                   allocatable={})
        self.kubelet_behind = False

    def arm_host_fault(self, fault: str) -> bool:
        host = load_host(self.root)
        if fault in host.faults:
            return False
        host.faults.append(fault)
        write_host(host, self.root)
        return True

    # -- the CLI ------------------------------------------------------------------------------

    def tick_argv(self) -> list[str]:
        return [EXE, "tick", "--executor", "sim", "--root", str(self.root), "--state-dir",
                str(self.state_dir), "--kubeconfig", str(self.kubeconfig), "--node-name",
                self.name]

    def run_tick(self, kill: Kill | None, hard_limit_s: float,
                 runtime: Path | None = None) -> TickRun:
        """One tick with $RUNTIME_DIRECTORY `runtime` (default: the host's own)."""
        watch = KillWatch(kill, self.state_dir / "state.json", self.effects) if kill else None
        env = {**os.environ, "RUNTIME_DIRECTORY": str(runtime or self.runtime)}
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
                tempfile.TemporaryDirectory() as scratch:
            report = Path(scratch) / "rusage.json"
            started = time.monotonic()
            proc = _POPEN([sys.executable, "-I", "-S", "-c", LAUNCHER,
                           json.dumps(self.tick_argv()), str(report)],
                          stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                          start_new_session=True)
            killed = over = False
            while proc.poll() is None:
                elapsed = time.monotonic() - started
                if elapsed > hard_limit_s:
                    over = True
                    break
                if watch is not None and watch.due(elapsed):
                    killed = True
                    break
                time.sleep(0.001 if watch is not None else 0.01)
            if killed or over:
                os.killpg(proc.pid, signal.SIGKILL)
            code = proc.wait()
            wall = time.monotonic() - started
            err.seek(0)
            stderr = err.read().decode(errors="replace")
            rss = 0
            try:  # the tick's own exit and peak RSS; none when the launcher was killed too
                measured = json.loads(report.read_text())
                code = os.waitstatus_to_exitcode(measured["status"])
                rss = int(measured["maxrss_kb"]) * 1024
            except (OSError, ValueError, KeyError):
                pass
        if killed and code != KILLED:
            killed = False  # it had exited by itself just before the signal
        return TickRun(exit_code=code, wall_s=wall, stderr=stderr, killed=killed or over,
                       over_bound=over, peak_rss_bytes=rss)

    def status(self) -> tuple[int, Json | None, str]:
        argv = [EXE, "status", "--json", "--state-dir", str(self.state_dir), "--node-name",
                self.name]
        try:
            proc = subprocess.run(argv, capture_output=True, timeout=STATUS_TIMEOUT_S,
                                  check=False, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return -1, None, f"status --json did not answer in {STATUS_TIMEOUT_S:.0f} s"
        stderr = proc.stderr.decode(errors="replace")
        try:
            doc = json.loads(proc.stdout)
        except ValueError:
            return proc.returncode, None, stderr or proc.stdout.decode(errors="replace")[:600]
        return proc.returncode, doc if isinstance(doc, dict) else None, stderr

    def recover(self) -> tuple[int, str]:
        argv = [EXE, "recover", "--root", str(self.root), "--state-dir", str(self.state_dir),
                "--node-name", self.name, "--confirm", self.name]
        proc = subprocess.run(argv, capture_output=True, timeout=120, check=False,
                              stdin=subprocess.DEVNULL, text=True)
        return proc.returncode, (proc.stdout + proc.stderr).strip()[-600:]
