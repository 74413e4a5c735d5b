"""What a scenario of the appliance VM sees (tests/vm): the rig's VM, the cluster as the
dashboard and its admin, and the guest's own tools. Every check is made from outside the
worker: the objects in the apiserver and what the guest's tools say.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.vm import access, machine
from tests.vm.cluster import REPORT, Cluster
from tests.vm.rigdir import Rig, RigError

GROUP, VERSION = "appliance.magicstick.dev", "v1alpha1"
TERMINAL = ("Succeeded", "PreparedUnverified", "Failed", "Rejected", "Interrupted", "RolledBack")
STATE_FILE = "/var/lib/magicstick/host-management/state.json"
SERVICE = "magicstick-host-management.service"


class Appliance:
    def __init__(self, directory: Path) -> None:
        self.rig = Rig(directory)
        self.config = self.rig.config()
        self.node: str = self.config["node"]
        self.node_uid: str = self.config["nodeUid"]
        self.namespace: str = self.config["namespace"]
        self.admin = Cluster(self.rig)
        self.dashboard = _TokenClient(self.rig.kubeconfig("dashboard"))
        self.hostop = "host-" + hashlib.sha256(
            json.dumps(self.node_uid).encode()).hexdigest()[:24]

    # -- the guest ---------------------------------------------------------------------------

    def sh(self, script: str, *, timeout: float = 120.0, check: bool = True) -> str:
        """A shell script as root in the guest; its stdout."""
        done = access.guest(self.rig, "sh", "-c", script, timeout=timeout, check=check)
        return done.stdout.decode(errors="replace")

    def boot_id(self) -> str:
        return self.sh("cat /proc/sys/kernel/random/boot_id").strip()

    def journal_boots(self) -> list[dict[str, Any]]:
        """`journalctl --list-boots`: every boot the guest's journal knows, oldest first."""
        return list(json.loads(self.sh("journalctl --list-boots -o json --no-pager")))

    def boots(self) -> list[str]:
        """The boot IDs the guest's journal knows (32 hex), oldest first."""
        return [entry["boot_id"] for entry in self.journal_boots()]

    def state(self) -> dict[str, Any]:
        """The worker's state file as the guest's disk holds it."""
        return dict(json.loads(self.sh(f"cat {STATE_FILE}")))

    def unit(self, *props: str, unit: str = SERVICE) -> dict[str, str]:
        out = self.sh(f"systemctl show {unit} " + " ".join(f"-p {p}" for p in props))
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def shutdown_scheduled(self) -> str:
        """/run/systemd/shutdown/scheduled, or "" when no shutdown is pending."""
        return self.sh("cat /run/systemd/shutdown/scheduled 2>/dev/null || true")

    def journal(self, *args: str) -> list[dict[str, Any]]:
        out = self.sh("journalctl -o json --no-pager " + " ".join(args))
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    # -- power ---------------------------------------------------------------------------------

    def power_state(self) -> str:
        return "running" if self.rig.qemu_running() is not None else "off"

    def cut(self) -> None:
        machine.power_cut(self.rig)

    def power_on(self) -> None:
        machine.power_on(self.rig)

    def wait_boot(self, old_boot_id: str, seconds: float = 300.0) -> str:
        return machine.wait_boot(self.rig, old_boot_id, seconds)

    def wait_power_off(self, seconds: float) -> None:
        wait_for(lambda: self.power_state() == "off", seconds, "the VM to power off")

    # -- the apiserver ---------------------------------------------------------------------------

    def apiserver(self, up: bool) -> None:
        """Stop the test apiserver (as a K3s restart stops it) or start it again, same data."""
        runner = self.rig.runner_pid()
        assert runner is not None, "the rig's apiserver runner is not running"
        os.kill(runner, signal.SIGUSR2 if up else signal.SIGUSR1)
        serving = self.rig.api_dir / "serving"
        wait_for(lambda: serving.exists() == up, 120,
                 f"the apiserver to {'serve' if up else 'stop'}")

    def kubeserver_pid(self) -> int:
        for pid, argv in self.rig.processes():
            if Path(argv[0]).name == "kubeserver":
                return pid
        raise AssertionError("the rig's kubeserver is not running")

    # -- the dashboard's side of the contract --------------------------------------------------

    def report(self) -> dict[str, Any]:
        node = self.admin.node(self.node) or {}
        raw = (node.get("metadata", {}).get("annotations") or {}).get(REPORT, "{}")
        return dict(json.loads(raw))

    def hostoperation(self) -> dict[str, Any] | None:
        status, body = self.dashboard.request("GET", self._path(self.hostop))
        return body if status == 200 and isinstance(body, dict) else None

    def status(self) -> dict[str, Any]:
        return dict(((self.hostoperation() or {}).get("status")) or {})

    def request(self, action: str, **spec: Any) -> str:
        """The dashboard's request, as it sends it: from the report it reads, replacing a
        finished request (delete with a UID precondition, then create). Returns its ID."""
        report = self.report()
        assert report.get("bootId"), f"no fresh report to act on: {report}"
        request_id = secrets.token_hex(16)
        body = {
            "action": action, "nodeName": self.node, "nodeUid": self.node_uid,
            "bootId": report["bootId"], "requestId": request_id,
            "acknowledgeDisruption": True, "allowExperimental": False, "experimentMode": False,
            "actorHash": hashlib.sha256(b"administrator").hexdigest(), "planId": "",
            **spec,
        }
        old = self.hostoperation()
        if old is not None:
            status, out = self.dashboard.request("DELETE", self._path(self.hostop), {
                "apiVersion": "v1", "kind": "DeleteOptions",
                "preconditions": {"uid": old["metadata"]["uid"]}})
            assert status == 200, (status, out)
        status, out = self.dashboard.request("POST", self._path(), {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "HostOperation",
            "metadata": {"name": self.hostop, "namespace": self.namespace}, "spec": body})
        assert status == 201, (status, out)
        return request_id

    def wait_phase(self, phases: str | tuple[str, ...], seconds: float,
                   request_id: str | None = None) -> dict[str, Any]:
        """Until the HostOperation's status is in one of `phases` (and of `request_id`)."""
        wanted = (phases,) if isinstance(phases, str) else phases
        seen: list[str] = []

        def reached() -> bool:
            status = self.status()
            phase = status.get("phase", "Pending")
            if not seen or seen[-1] != phase:
                seen.append(phase)
            return phase in wanted and (request_id is None
                                        or status.get("requestId") == request_id)

        wait_for(reached, seconds, f"phase {' or '.join(wanted)} (seen: {' -> '.join(seen)})")
        return self.status()

    def _path(self, name: str | None = None) -> str:
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{self.namespace}/hostoperations"
        return path if name is None else f"{path}/{name}"


class _TokenClient(Cluster):
    """The cluster as the dashboard: its token from the dashboard kubeconfig."""

    def __init__(self, kubeconfig: Path) -> None:
        import ssl

        config = json.loads(kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        self.url = cluster["server"]
        self.token = config["users"][0]["user"]["token"]
        self.context = ssl.create_default_context(cafile=cluster["certificate-authority"])


def wait_for(check: Callable[[], bool], seconds: float, what: str, every: float = 1.0) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            if check():
                return
        except (OSError, RigError, ValueError):
            pass  # the guest or the apiserver not answering right now
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}")
        time.sleep(every)
