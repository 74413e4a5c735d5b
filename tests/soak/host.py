"""One simulated host of the soak: its root, state directory, Node, proxy, and the real CLI.

The tick and `status --json` run as subprocesses of the installed `magicstick-host`, exactly as
the systemd unit runs them (with `--executor sim` on the simulated root). A tick may be
SIGKILLed at a moment `tests/soak/kills.py` picks; and it is always killed at the hard limit,
which is itself a violation.
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
from magicstick_host.sim.boot import boot_host
from magicstick_host.sim.writer import create_host, load_host, write_host
from tests.soak.invariants import KILLED, TickRun
from tests.soak.kills import KillWatch
from tests.soak.observe import EffectsTail
from tests.soak.proxy import FaultProxy
from tests.soak.schedule import Kill

EXE = str(Path(sys.executable).parent / "magicstick-host")
# captured at import: the test suite's subprocess guard patches subprocess.Popen per test
_POPEN = subprocess.Popen
STATUS_TIMEOUT_S = 30.0
Json = dict[str, Any]


class SoakHost:
    def __init__(self, work: Path, key: str, name: str, scenario: str, cluster: Any,
                 proxy: FaultProxy, kubeconfig: Path) -> None:
        # `key` ("host-0") names the host in the fault schedule: stable across runs
        self.key, self.name, self.scenario = key, name, scenario
        self.work, self.generation = work, 0
        self.cluster, self.proxy, self.kubeconfig = cluster, proxy, kubeconfig
        self._install()

    def _install(self) -> None:
        """A freshly installed machine: its scenario's root, an empty state directory, and a
        Node registered by its new kubelet (a new UID, so a new HostOperation name)."""
        gen = self.work / f"gen-{self.generation}"
        self.root, self.state_dir = gen / "host", gen / "state"
        create_host(self.scenario, self.root)
        host = load_host(self.root)
        node = self.cluster.create_node(self.name, boot_id=host.boot_id,
                                        kernel=host.kernel.release)
        self.node_uid: str = node["metadata"]["uid"]
        self.request_name = hostoperation_name(self.node_uid)
        self.effects = EffectsTail(self.root)
        self.kubelet_behind = False

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
        """The host starts again; the kubelet reports it now, or a tick later."""
        new = boot_host(self.root)
        self.kubelet_behind = True
        if not kubelet_lag:
            self.kubelet_catch_up()
        return new

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

    def run_tick(self, kill: Kill | None, hard_limit_s: float) -> TickRun:
        watch = KillWatch(kill, self.state_dir / "state.json", self.effects) if kill else None
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            started = time.monotonic()
            proc = _POPEN(self.tick_argv(), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
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
        if killed and code != KILLED:
            killed = False  # it had exited by itself just before the signal
        return TickRun(exit_code=code, wall_s=wall, stderr=stderr, killed=killed or over,
                       over_bound=over)

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
