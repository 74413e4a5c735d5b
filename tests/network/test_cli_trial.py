"""A network trial driven from the command line alone (issue 24, deliverable 3): every host-side
step is a subprocess of the installed `magicstick-host` with `--executor sim`, as the soak and
the hostile suite run it: `sim create`, `tick`, `sim boot` (a power loss: the transient timers
are gone, the boot recovery unit's command runs, the network starts on what netplan last
generated), `sim fire-timers` (the rollback timer elapses and starts `network-rollback`),
`status --json`. The test plays only the cluster's other parts: the dashboard (the request
Secret, the HostOperation) and the kubelet (the Node and its boot)."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from magicstick_host.domain.network.request import (
    NODE_LABEL,
    REQUEST_ID_LABEL,
    SECRET_NAMESPACE,
    SECRET_TYPE,
)
from magicstick_host.ports.kube import hostoperation_name
from magicstick_host.sim.writer import load_host
from tests.harness.command import magicstick_command
from tests.harness.world import random_hex
from tests.kubeserver.fixtures import KubeCluster
from tests.network.helpers import CLUSTER_ETH, inventory

pytestmark = [pytest.mark.apiserver, pytest.mark.real_commands]

EXE = magicstick_command()
# the lab port's address moves within its subnet: visible in `ip`, and not the cluster's
LAB_ADDRESS_CHANGE = {"interface": "enp2s0", "mode": "static", "address": "10.20.0.33/24",
                      "gateway": "10.20.0.1", "dns": ["10.20.0.1"], "metric": 100}


def cli(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=120,
                          check=False, stdin=subprocess.DEVNULL)
    if ok:
        assert proc.returncode == 0, (args, proc.returncode, proc.stdout, proc.stderr)
    return proc


class CliHost:
    def __init__(self, tmp: Path, kube: KubeCluster) -> None:
        self.root, self.state, self.kube = tmp / "host", tmp / "state", kube
        self.node = f"strix-cli-{random_hex(8)}"  # the apiserver is shared by the tests
        cli("sim", "create", "network-ethernet-dhcp", str(self.root))
        host = load_host(self.root)
        node = kube.create_node(self.node, boot_id=host.boot_id, kernel=host.kernel.release)
        self.node_uid = node["metadata"]["uid"]
        code, out = kube.request(
            "PATCH", f"/api/v1/nodes/{self.node}/status",
            {"status": {"addresses": [{"type": "InternalIP", "address": CLUSTER_ETH}]}},
            content_type="application/merge-patch+json")
        assert code == 200, out
        self.name = hostoperation_name(self.node_uid)

    def tick(self) -> int:
        return cli("tick", "--executor", "sim", "--root", str(self.root), "--state-dir",
                   str(self.state), "--kubeconfig", str(self.kube.worker_kubeconfig),
                   "--node-name", self.node, ok=False).returncode

    def status(self) -> dict[str, Any]:
        doc = json.loads(cli("status", "--json", "--state-dir", str(self.state),
                             "--node-name", self.node).stdout)
        assert isinstance(doc, dict)
        return doc

    def hostop_status(self) -> dict[str, Any]:
        code, out = self.kube.request("GET", self.kube.hostoperations_path(self.name))
        assert code == 200, out
        return dict(out.get("status") or {})

    def netplan(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted((self.root / "etc/netplan").iterdir())}

    def live_ipv4(self, interface: str) -> tuple[str, ...]:
        view = inventory(self.root, (CLUSTER_ETH,)).interface(interface)
        assert view is not None
        return view.ipv4

    # -- the dashboard and the kubelet ------------------------------------------------------

    def request(self, settings: dict[str, Any]) -> str:
        self.tick()
        code, node = self.kube.request("GET", f"/api/v1/nodes/{self.node}")
        report = json.loads(node["metadata"]["annotations"][
            "appliance.magicstick.dev/host-management"])
        request_id = random_hex(32)
        code, secret = self.kube.request("POST", f"/api/v1/namespaces/{SECRET_NAMESPACE}/secrets", {
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": f"host-network-{request_id}", "namespace": SECRET_NAMESPACE,
                         "labels": {REQUEST_ID_LABEL: request_id, NODE_LABEL: self.node_uid}},
            "immutable": True, "type": SECRET_TYPE,
            "data": {"settings.json": base64.b64encode(json.dumps(settings).encode()).decode()},
        }, user="dashboard")
        assert code == 201, secret
        self.kube.create_hostoperation(self.name, {
            "action": "configure-network", "nodeName": self.node, "nodeUid": self.node_uid,
            "bootId": load_host(self.root).boot_id, "requestId": request_id,
            "acknowledgeDisruption": True, "allowExperimental": False, "experimentMode": False,
            "actorHash": hashlib.sha256(b"admin@example").hexdigest(),
            "planId": report["network"]["id"],
            "networkRef": {"name": secret["metadata"]["name"], "uid": secret["metadata"]["uid"]},
        })
        return request_id

    def kubelet_reports_the_boot(self) -> None:
        host = load_host(self.root)
        self.kube.set_node_info(self.node, boot_id=host.boot_id, kernel=host.kernel.release)

    def until(self, phase: str, max_ticks: int = 10) -> dict[str, Any]:
        for _ in range(max_ticks):
            self.tick()
            if self.hostop_status().get("phase") == phase:
                return self.hostop_status()
        raise AssertionError(f"never reached {phase}: {self.hostop_status()}")


@pytest.fixture
def host(tmp_path: Path, kube: KubeCluster) -> CliHost:
    return CliHost(tmp_path, kube)


def test_a_power_loss_during_the_trial_boots_the_old_configuration(host: CliHost) -> None:
    before = host.netplan()
    assert host.live_ipv4("enp2s0") == ("10.20.0.10/24",)
    host.request(LAB_ADDRESS_CHANGE)
    host.until("AwaitingConfirmation")
    assert host.netplan() != before and host.live_ipv4("enp2s0") == ("10.20.0.33/24",)
    assert "armed" not in cli("sim", "timers", str(host.root)).stdout  # listed, by its unit
    assert "magicstick-host-network-rollback.timer" in cli("sim", "timers", str(host.root)).stdout

    booted = cli("sim", "boot", str(host.root), "--state-dir", str(host.state))
    assert "network-recovery" in booted.stdout and "exited 0" in booted.stdout, booted.stdout
    # the network started on the old configuration: the recovery ran before it
    assert host.netplan() == before
    assert host.live_ipv4("enp2s0") == ("10.20.0.10/24",)
    assert "no transient timer" in cli("sim", "timers", str(host.root)).stdout

    host.kubelet_reports_the_boot()
    final = host.until("RolledBack")
    assert "restarted during the network trial" in final["message"]
    console = host.status()
    assert console["operation"]["phase"] == "RolledBack"
    host.tick()
    assert not (host.state / "network" / "trial.json").exists()
    assert host.netplan() == before and host.live_ipv4("enp2s0") == ("10.20.0.10/24",)


def test_the_rollback_timer_fires_at_the_deadline(host: CliHost) -> None:
    before = host.netplan()
    host.request(LAB_ADDRESS_CHANGE)
    awaiting = host.until("AwaitingConfirmation")
    early = cli("sim", "fire-timers", str(host.root), "--state-dir", str(host.state))
    assert "not due yet" in early.stdout, early.stdout
    assert host.live_ipv4("enp2s0") == ("10.20.0.33/24",)  # nothing fired before its time

    fired = cli("sim", "fire-timers", str(host.root), "--state-dir", str(host.state),
                "--elapse")
    assert "network-rollback" in fired.stdout and "exited 0" in fired.stdout, fired.stdout
    assert host.netplan() == before
    assert host.live_ipv4("enp2s0") == ("10.20.0.10/24",)
    assert "no transient timer" in cli("sim", "timers", str(host.root)).stdout

    host.tick()
    published = host.hostop_status()
    assert published["phase"] == "RolledBack", published
    assert "not confirmed before its deadline" in published["message"]
    assert published.get("confirmationDeadline") is None
    assert awaiting["confirmationDeadline"]
    assert host.status()["operation"]["phase"] == "RolledBack"
