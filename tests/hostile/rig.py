"""One hostile case's world: a simulated host, its Node on the real test apiserver, a
`HostileProxy` in front of the apiserver, and the real CLI run as a subprocess.

As in the soak (tests/soak/host.py), the tick is the installed `magicstick-host tick
--executor sim` on the simulated root; `run_cli` measures each run with os.wait4 (wall time
and the child's peak RSS) and kills its process group at a hard limit.

The reboot flow most families use: the dashboard asks for a reboot; a clean tick accepts it
and schedules the shutdown (one `shutdown` effect); the simulated host boots and its kubelet
reports the new boot ID; then the hostile tick runs. Completing the reboot is the local step
that must happen whatever Kubernetes does: the new boot ID is local evidence, so the state
file's operation goes from RebootScheduled to Succeeded with a journal entry, in that tick.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from magicstick_host.domain.state import State
from magicstick_host.ports.kube import hostoperation_name
from magicstick_host.sim.boot import boot_host
from magicstick_host.sim.effects_log import read_effects
from magicstick_host.sim.writer import create_host, load_host
from tests.harness.command import magicstick_command
from tests.hostile.checks import Run, Verdict, effect_violations, write_violations
from tests.hostile.proxy import HostileProxy, Plan
from tests.kubeserver.harness import NAMESPACE
from tests.soak.observe import read_journal, read_state
from tests.soak.pki import proxied_kubeconfig

EXE = magicstick_command()
# captured at import: the suite's subprocess guard patches subprocess.Popen per test
_POPEN = subprocess.Popen
HARD_LIMIT_S = 60.0  # twice the bound: a run over 30 s is a violation already
READY = "strix-halo-ubuntu-26.04-ready"
GROUP, VERSION = "appliance.magicstick.dev", "v1alpha1"


@dataclass(frozen=True)
class Pki:
    """The proxy's CA and certificate, and the worker's upstream (made once per session)."""

    ca: Path
    cert: Path
    key: Path
    upstream: Any  # tests.soak.pki.Upstream
    worker_kubeconfig: Path  # the apiserver's own (token user `worker`)
    token: str


def base_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RUNTIME_DIRECTORY"}
    env.update(extra or {})
    return env


# Linux records a process's RSS high-water mark at exec from the memory it had before (fork
# copies the parent's): measured straight from the test process (hundreds of MB after a 64 MiB
# answer), every child would inherit that. A small launcher process runs the command instead and
# reports its wait4 rusage: what it adds is its own few MB (LAUNCHER_RSS_BYTES at most).
LAUNCHER = """
import json, os, sys
argv, report = json.loads(sys.argv[1]), sys.argv[2]
pid = os.fork()
if pid == 0:
    try:
        os.execv(argv[0], argv)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as out:
    json.dump({"status": status, "maxrss_kb": usage.ru_maxrss}, out)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def run_cli(label: str, argv: list[str], env: Mapping[str, str] | None = None,
            limit_s: float = HARD_LIMIT_S, cwd: str | None = None) -> Run:
    """Run one command to its end (or kill its process group at `limit_s`), with its wall
    time and its peak RSS (wait4, through the launcher)."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "rusage.json"
        out_path, err_path = Path(scratch) / "out", Path(scratch) / "err"
        with out_path.open("wb") as out, err_path.open("wb") as err:
            started = time.monotonic()
            proc = _POPEN([sys.executable, "-I", "-S", "-c", LAUNCHER, json.dumps(argv),
                           str(report)], stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                          env=dict(env) if env is not None else base_env(),
                          start_new_session=True, cwd=cwd)
            killed = False
            while proc.poll() is None:
                if time.monotonic() - started > limit_s:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    killed = True
                    proc.wait()
                    break
                time.sleep(0.01)
            wall = time.monotonic() - started
        try:
            measured = json.loads(report.read_text())
            code = os.waitstatus_to_exitcode(measured["status"])
            rss = int(measured["maxrss_kb"]) * 1024
        except (OSError, ValueError):  # the launcher was killed with it
            code, rss = -signal.SIGKILL, 0
        return Run(label=label, argv=list(argv), exit_code=code, wall_s=wall,
                   maxrss_bytes=rss, stdout=out_path.read_bytes(),
                   stderr=err_path.read_text(errors="replace"), killed_at_limit=killed)


class Rig:
    def __init__(self, kube: Any, pki: Pki, work: Path, verdict: Verdict,
                 scenario: str = READY, state_dir: Path | None = None) -> None:
        self.kube, self.pki, self.work, self.verdict = kube, pki, work, verdict
        self.root = work / "host"
        self.state_dir = state_dir or work / "state"
        self.node_name = f"hostile-{secrets.token_hex(5)}"
        create_host(scenario, self.root, boot_id=str(__import__("uuid").uuid4()))
        host = load_host(self.root)
        node = kube.create_node(self.node_name, boot_id=host.boot_id, kernel=host.kernel.release)
        self.node_uid: str = node["metadata"]["uid"]
        self.request_name = hostoperation_name(self.node_uid)
        self.proxy = HostileProxy(pki.upstream, pki.cert, pki.key)
        self.proxy.start()
        self.kubeconfig = proxied_kubeconfig(pki.worker_kubeconfig, self.proxy.url, pki.ca,
                                             work / "worker.kubeconfig")
        self.ticks = 0

    def close(self) -> None:
        """Stop the proxy; delete the case's HostOperation and Node (other tests share the
        apiserver)."""
        self.proxy.stop()
        with contextlib.suppress(Exception):
            self.kube.request("DELETE", self.hostop_path())
        with contextlib.suppress(Exception):
            self.kube.request("DELETE", f"/api/v1/nodes/{self.node_name}")

    # -- the cluster's other parts ------------------------------------------------------------

    def hostop_path(self) -> str:
        return self.kube.hostoperations_path(self.request_name)

    def request(self, action: str = "reboot") -> dict[str, Any]:
        spec = {
            "action": action, "nodeName": self.node_name, "nodeUid": self.node_uid,
            "bootId": load_host(self.root).boot_id, "requestId": secrets.token_hex(16),
            "acknowledgeDisruption": True, "allowExperimental": False, "experimentMode": False,
            "actorHash": hashlib.sha256(b"admin@example").hexdigest(), "planId": "",
        }
        self.request_id = spec["requestId"]
        return self.kube.create_hostoperation(self.request_name, spec, namespace=NAMESPACE)

    def boot(self) -> str:
        new = boot_host(self.root)
        self.kube.set_node_info(self.node_name, boot_id=new,
                                kernel=load_host(self.root).kernel.release, allocatable={})
        return new

    def hostop(self) -> dict[str, Any] | None:
        code, obj = self.kube.request("GET", self.hostop_path())
        return obj if code == 200 and isinstance(obj, dict) else None

    # -- the CLI ------------------------------------------------------------------------------

    def tick_argv(self, kubeconfig: Path | None = None,
                  state_dir: Path | None = None) -> list[str]:
        return [EXE, "tick", "--executor", "sim", "--root", str(self.root),
                "--state-dir", str(state_dir or self.state_dir),
                "--kubeconfig", str(kubeconfig or self.kubeconfig), "--node-name", self.node_name]

    def tick(self, label: str, allowed: set[int], plan: Plan | None = None,
             kubeconfig: Path | None = None, env: Mapping[str, str] | None = None) -> Run:
        self.ticks += 1
        self.proxy.begin(label, plan)
        try:
            run = run_cli(label, self.tick_argv(kubeconfig), env=base_env(env))
        finally:
            fired = self.proxy.end()
        if plan is not None:
            self.verdict.expect(fired > 0, f"{label}: the hostile answer ({plan.label}) never "
                                "acted: the case tested nothing (no request matched)")
            what = f": {plan.details[0]}" if plan.details else ""
            self.verdict.note(f"{label}: {plan.label} acted on {fired} request(s){what}")
        return self.verdict.run(run, allowed)

    def status_json(self) -> tuple[int, dict[str, Any] | None]:
        run = run_cli("status", [EXE, "status", "--json", "--state-dir", str(self.state_dir),
                                 "--node-name", self.node_name], limit_s=60)
        try:
            doc = json.loads(run.stdout)
        except ValueError:
            return run.exit_code, None
        return run.exit_code, doc if isinstance(doc, dict) else None

    # -- local truth --------------------------------------------------------------------------

    def state(self) -> tuple[State | None, str]:
        return read_state(self.state_dir)

    def journal(self) -> list[dict[str, Any]]:
        return read_journal(self.state_dir)

    def effects(self) -> list[dict[str, Any]]:
        return read_effects(self.root)

    def phase(self) -> str | None:
        state, _ = self.state()
        op = state.operation if state is not None else None
        return str(op.phase) if op is not None else None

    # -- the reboot flow ----------------------------------------------------------------------

    def schedule_reboot(self, env: Mapping[str, str] | None = None) -> bool:
        """Request a reboot and let a clean tick schedule it; False (a violation recorded) if
        it did not, so the case cannot go on."""
        self.request("reboot")
        run = self.tick("tick-1 (clean: accept, schedule)", {0}, env=env)
        phase = self.phase()
        shutdowns = [e for e in self.effects() if e.get("effect") == "shutdown"]
        return self.verdict.expect(
            run.exit_code == 0 and phase == "RebootScheduled" and len(shutdowns) == 1,
            f"setup: the clean tick did not schedule the reboot (phase {phase}, "
            f"{len(shutdowns)} shutdown effects)")

    def check_reboot_completed(self, label: str, accept: tuple[str, ...] = ("Succeeded",)) -> None:
        """The local step: the new boot completed the operation, in the state file and in the
        journal, whatever Kubernetes answered."""
        state, error = self.state()
        op = state.operation if state is not None else None
        phase = str(op.phase) if op is not None else None
        self.verdict.expect(state is not None, f"{label}: the state file cannot be read: {error}")
        self.verdict.expect(phase in accept, f"{label}: the local step did not run: the "
                            f"operation is {phase}, expected {' or '.join(accept)} once the new "
                            "boot is visible")
        if phase in accept:
            journaled = [e for e in self.journal() if e.get("requestId") == self.request_id
                         and e.get("phase") == phase]
            self.verdict.expect(bool(journaled), f"{label}: the state says {phase} but the "
                                "journal has no entry for it")

    def check_no_duplicates(self) -> None:
        violations, observations = write_violations(self.proxy.log)
        self.verdict.violations += violations
        for o in observations:
            self.verdict.note(o)
        self.verdict.violations += effect_violations(self.effects())
        shutdowns = [e for e in self.effects() if e.get("effect") == "shutdown"]
        self.verdict.expect(len(shutdowns) <= 1,
                            f"{len(shutdowns)} shutdowns in the effects log for one reboot")
