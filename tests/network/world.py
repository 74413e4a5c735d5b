"""A simulated host with a network, the real apiserver and the real tick, for whole network
operations: the dashboard creates the request Secret and the HostOperation, confirms through
the annotation; systemd's part is played here (the rollback timer fires once its deadline has
passed, a power loss boots the host with the boot recovery before the network starts)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from magicstick_host.domain.network.operation import CONFIRMATION_ANNOTATION
from magicstick_host.domain.network.request import (
    NODE_LABEL,
    REQUEST_ID_LABEL,
    SECRET_NAMESPACE,
    SECRET_TYPE,
)
from magicstick_host.network.rollback import (
    RollbackDeps,
    RollbackResult,
    run_boot_recovery,
    run_deadline_rollback,
)
from magicstick_host.network.trial_steps import TrialPorts
from magicstick_host.ports.network_store import NetworkStore
from magicstick_host.sim.boot import boot_host
from magicstick_host.sim.network import boot_network, start_network
from magicstick_host.sim.runner import SimRunner
from magicstick_host.sim.writer import load_host, write_host
from magicstick_host.tick import CrashHook, no_crash
from tests.harness.world import NAMESPACE, World, random_hex
from tests.network.helpers import CLUSTER_ETH

ROLLBACK_UNIT = "magicstick-host-network-rollback"
MERGE = "application/merge-patch+json"
SECRETS = f"/api/v1/namespaces/{SECRET_NAMESPACE}/secrets"


def create_network_secret(w: World, request_id: str, settings: Any,
                          **overrides: Any) -> dict[str, Any]:
    """As the dashboard does: immutable, typed, labelled for the request and the node."""
    body: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": f"host-network-{request_id}", "namespace": SECRET_NAMESPACE,
                     "labels": {REQUEST_ID_LABEL: request_id, NODE_LABEL: w.node_uid}},
        "immutable": True,
        "type": SECRET_TYPE,
        "data": {"settings.json": base64.b64encode(json.dumps(settings).encode()).decode()},
    }
    for key, value in overrides.items():
        if key == "labels":
            body["metadata"]["labels"] = value
        else:
            body[key] = value
    code, out = w.kube.request("POST", SECRETS, body, user="dashboard")
    assert code == 201, out
    assert isinstance(out, dict)
    return out


def request_network(w: World, settings: Any, *, action: str = "configure-network",
                    uid: str | None = None, secret: dict[str, Any] | None = None,
                    **spec: Any) -> str:
    """The request Secret, then the HostOperation approved against the published network id
    (the report must be published). Returns the requestId."""
    report = w.report()
    assert report is not None, "no report published"
    request_id = random_hex(32)
    created = create_network_secret(w, request_id, settings, **(secret or {}))
    ref = {"name": created["metadata"]["name"], "uid": uid or created["metadata"]["uid"]}
    w.create_request(action, requestId=request_id, planId=report["network"]["id"],
                     networkRef=ref, **spec)
    return request_id


class NetworkWorld(World):
    def __init__(self, tmp: Path, kube: Any, scenario: str, cluster_ip: str) -> None:
        super().__init__(tmp, kube, scenario)
        self.cluster_ip = cluster_ip
        self.exit_codes: list[int] = []  # of the ticks tick_and_systemd ran to their end
        self.set_internal_ip(cluster_ip)

    def set_internal_ip(self, address: str) -> None:
        """As the kubelet reports it: the Node's InternalIP, the host's cluster address."""
        code, out = self.kube.request(
            "PATCH", f"/api/v1/nodes/{self.node_name}/status",
            {"status": {"addresses": [{"type": "InternalIP", "address": address},
                                      {"type": "Hostname", "address": self.node_name}]}},
            content_type=MERGE)
        assert code == 200, out

    # -- the dashboard --------------------------------------------------------------------

    def network(self) -> dict[str, Any]:
        self.tick()
        report = self.report()
        assert report is not None
        network: dict[str, Any] = report["network"]
        return network

    def create_secret(self, request_id: str, settings: Any, **overrides: Any) -> dict[str, Any]:
        return create_network_secret(self, request_id, settings, **overrides)

    def secret(self, request_id: str) -> dict[str, Any] | None:
        code, out = self.kube.request("GET", f"{SECRETS}/host-network-{request_id}")
        assert code in (200, 404), out
        return out if code == 200 else None

    def request_network(
        self, settings: Any, *, action: str = "configure-network", uid: str | None = None,
        secret: dict[str, Any] | None = None, **spec: Any,
    ) -> str:
        """What the dashboard does for one change: the Secret, then the HostOperation with the
        network id it showed. Returns the requestId."""
        self.tick()
        return request_network(self, settings, action=action, uid=uid, secret=secret, **spec)

    def confirm(self, request_id: str) -> None:
        path = (f"/apis/appliance.magicstick.dev/v1alpha1/namespaces/{NAMESPACE}/"
                f"hostoperations/{self.request_name}")
        code, out = self.kube.request(
            "PATCH", path, {"metadata": {"annotations": {CONFIRMATION_ANNOTATION: request_id}}},
            user="dashboard", content_type=MERGE)
        assert code == 200, out

    # -- the host and systemd -------------------------------------------------------------

    @property
    def store(self) -> NetworkStore:
        return NetworkStore(self.state_dir)

    def netplan(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted((self.root / "etc/netplan").glob("*"))}

    def rollback_deps(self) -> RollbackDeps:
        ports = TrialPorts(root=str(self.root), state_dir=self.state_dir,
                           runner=SimRunner(self.root), clock=self.clock)
        return RollbackDeps(ports=ports, boot_id=lambda: load_host(self.root).boot_id)

    def timer_armed(self) -> bool:
        net = load_host(self.root).network
        return net is not None and ROLLBACK_UNIT in net.timers

    def systemd(self) -> RollbackResult | None:
        """The transient timer elapses once the trial's deadline has passed: systemd unloads
        it and starts `magicstick-host network-rollback`."""
        trial = self.store.load_trial()
        if not self.timer_armed() or trial is None or trial.deadline is None:
            return None
        if self.clock.boottime < trial.deadline.boottime:
            return None
        host = load_host(self.root)
        assert host.network is not None
        host.network.timers.pop(ROLLBACK_UNIT)
        write_host(host, self.root)
        return run_deadline_rollback(self.rollback_deps())

    def tick_and_systemd(self, crash: CrashHook = no_crash, advance_s: float = 15.0) -> None:
        result = self.tick(crash, advance_s)
        if result is not None:
            self.exit_codes.append(int(result.exit_code))
        self.systemd()

    def power_loss(self) -> RollbackResult:
        """The power goes and comes back: the timers are gone, the boot recovery runs before
        the network starts, then the kubelet reports the new boot."""
        boot_host(self.root)
        host = load_host(self.root)
        boot_network(host)
        write_host(host, self.root)
        self.clock.reboot()
        result = run_boot_recovery(self.rollback_deps())
        host = load_host(self.root)
        start_network(host)
        write_host(host, self.root)
        self.kube.set_node_info(self.node_name, boot_id=host.boot_id,
                                kernel=host.kernel.release)
        return result

    def drive_network(self, max_ticks: int = 40, crash: CrashHook = no_crash) -> str:
        """Tick (and let the timer fire) until the operation has ended and its status says so."""
        for _ in range(max_ticks):
            self.tick_and_systemd(crash)
            op = self.state().operation
            status = ((self.hostop() or {}).get("status") or {})
            if op is not None and op.terminal and status.get("phase") == op.phase:
                return str(op.phase)
        raise AssertionError(f"the operation did not end in {max_ticks} ticks: "
                             f"{self.state().operation}")

    def until_phase(self, phase: str, max_ticks: int = 10) -> dict[str, Any]:
        for _ in range(max_ticks):
            self.tick_and_systemd()
            status = ((self.hostop() or {}).get("status") or {})
            if status.get("phase") == phase:
                return status
        raise AssertionError(f"never reached {phase}: {self.state().operation}")


# the Ethernet host's cluster interface, kept as it is: the settings a trial may apply there
STATIC_KEEPING_THE_CLUSTER_ADDRESS = {
    "interface": "enp1s0", "mode": "static", "address": f"{CLUSTER_ETH}/24",
    "gateway": "192.168.1.1", "dns": ["192.168.1.1"], "metric": 100,
}


def hostop_status(w: World) -> dict[str, Any]:
    """The HostOperation's status as the dashboard reads it ({} before the first write)."""
    return dict(((w.hostop() or {}).get("status")) or {})

