"""A simulated host + a real apiserver + the real tick: whole operations in a test.

`World` drives one host through its operation: the dashboard user creates the HostOperation on
the real test apiserver, `tick()` runs the real tick (with the host simulator as executor and a
fake clock), `boot()` performs the pending restart of the simulated host and updates the Node
the way the kubelet would. Crash points are injected with `CrashAt`.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from magicstick_host import app
from magicstick_host.domain.state import State
from magicstick_host.ports.clock import Instant
from magicstick_host.ports.kube import RealKube, hostoperation_name
from magicstick_host.ports.state_store import FileStateStore
from magicstick_host.profile_store import default_profiles_dir, load_profiles
from magicstick_host.sim.boot import boot_host
from magicstick_host.sim.faults import SimulatedCrash  # the process died (tick or simulator)
from magicstick_host.sim.runner import SimRunner, read_effects
from magicstick_host.sim.writer import create_host, load_host
from magicstick_host.tick import CrashHook, TickDeps, no_crash
from magicstick_host.tick_result import TickResult

NAMESPACE = "ai-system"
PLAYBOOKS = Path(__file__).resolve().parents[2] / "playbooks"
GROUP, VERSION, PLURAL = "appliance.magicstick.dev", "v1alpha1", "hostoperations"


APPLIANCES = f"/apis/{GROUP}/{VERSION}/namespaces/{NAMESPACE}/appliances"


def report_node_eligibility(kube: Any, entry: dict[str, Any]) -> None:
    """Put one node's entry into Appliance local's amd-gpu compatibility list (shared by every
    test's node, so read-modify-write with the resourceVersion, retried on a conflict)."""
    code, _ = kube.request("GET", f"{APPLIANCES}/local")
    if code == 404:
        kube.request("POST", APPLIANCES, {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "Appliance",
            "metadata": {"name": "local", "namespace": NAMESPACE}, "spec": {},
        })
    for _ in range(10):
        code, obj = kube.request("GET", f"{APPLIANCES}/local")
        assert code == 200, obj
        status = obj.get("status") or {}
        amd = (status.get("hardwareOperators") or {}).get("amd-gpu") or {}
        nodes = [n for n in (amd.get("compatibility") or {}).get("nodes") or []
                 if n.get("nodeUid") != entry["nodeUid"]]
        body = {
            "metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]},
            "status": {"hardwareOperators": {"amd-gpu": {
                "compatibility": {"nodes": [*nodes, entry]}}}},
        }
        code, out = kube.request("PATCH", f"{APPLIANCES}/local/status", body,
                                 content_type="application/merge-patch+json")
        if code == 200:
            return
        assert code == 409, out
    raise AssertionError("Appliance local kept changing")


class CrashAt:
    """Crash at the n-th crash point reached (1-based); None never crashes, only counts."""

    def __init__(self, target: int | None = None) -> None:
        self.target = target
        self.points: list[str] = []

    def __call__(self, point: str) -> None:
        self.points.append(point)
        if self.target is not None and len(self.points) == self.target:
            raise SimulatedCrash(point)


@dataclass
class FakeClock:
    wall: datetime = field(default_factory=lambda: datetime.now(UTC).replace(microsecond=0))
    boottime: float = 40.0

    def now(self) -> Instant:
        return Instant(wall=self.wall, boottime=self.boottime)

    def advance(self, seconds: float) -> None:
        self.wall += timedelta(seconds=seconds)
        self.boottime += seconds

    def reboot(self, downtime_s: float = 90.0, uptime_s: float = 25.0) -> None:
        self.wall += timedelta(seconds=downtime_s + uptime_s)
        self.boottime = uptime_s


def random_hex(n: int) -> str:
    return secrets.token_hex(n // 2)


class World:
    def __init__(self, tmp: Path, kube: Any, scenario: str, *, node_name: str | None = None):
        self.kube = kube
        self.root = tmp / "host"
        self.state_dir = tmp / "state"
        self.node_name = node_name or f"sim-{random_hex(8)}"
        boot_id = str(__import__("uuid").uuid4())
        create_host(scenario, self.root, boot_id=boot_id)
        self.clock = FakeClock()
        self.profiles = load_profiles(default_profiles_dir())
        self.node = kube.create_node(
            self.node_name, boot_id=boot_id, kernel=load_host(self.root).kernel.release
        )
        self.node_uid: str = self.node["metadata"]["uid"]
        self.request_name = hostoperation_name(self.node_uid)
        self.worker = RealKube(str(kube.worker_kubeconfig), timeout=10)

    # -- the host -------------------------------------------------------------------------

    @property
    def boot_id(self) -> str:
        return load_host(self.root).boot_id

    def deps(self, crash: CrashHook = no_crash) -> TickDeps:
        """The real tick's ports around the simulator, the fake clock and the test apiserver,
        assembled by the composition root."""
        return app.tick_deps(
            root=str(self.root),
            runner=SimRunner(self.root),
            clock=self.clock,
            kube=self.worker,
            state_dir=self.state_dir,
            profiles=self.profiles,
            node_name=self.node_name,
            playbooks_dir=PLAYBOOKS,
            crash=crash,
        )

    def tick(self, crash: CrashHook = no_crash, advance_s: float = 15.0) -> TickResult | None:
        """One tick, then the clock moves on. None when the tick "crashed"."""
        try:
            return app.tick(self.deps(crash))
        except SimulatedCrash:
            return None
        finally:
            self.clock.advance(advance_s)

    def boot(self) -> str:
        """The pending restart happens; the kubelet reports the new boot on the Node."""
        new_boot = boot_host(self.root)
        self.clock.reboot()
        # a restarted kubelet reports afresh: no device plugin has registered its GPUs yet
        self.kube.set_node_info(
            self.node_name,
            boot_id=new_boot,
            kernel=load_host(self.root).kernel.release,
            allocatable={},
        )
        return new_boot

    def device_plugin(self, gpus: int = 1) -> None:
        """Act as the ROCm device plugin: the Node gets an allocatable amd.com/gpu."""
        self.kube.set_node_info(self.node_name, allocatable={"amd.com/gpu": str(gpus)})

    def operator(self, **entry: Any) -> None:
        """Act as the magicstick operator: Appliance `local` reports this node's GPU
        eligibility for the current boot (contract.md, "Appliance"); `entry` overrides."""
        report_node_eligibility(
            self.kube,
            {
                "nodeUid": self.node_uid,
                "hostBootId": self.boot_id,
                "hostFingerprint": hashlib.sha256(self.node_uid.encode()).hexdigest(),
                "eligible": True,
                "hostDriverReady": True,
                "resourceRegistered": True,
                **entry,
            },
        )

    def registered(self) -> None:
        """The GPU registers: the device plugin and the operator both report it."""
        self.device_plugin()
        self.operator()

    def playbooks(self, name: str | None = None) -> list[dict[str, Any]]:
        runs = self.effects("playbook")
        return [r for r in runs if name is None or r.get("playbook") == name]

    def effects(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [e for e in read_effects(self.root) if kind is None or e["effect"] == kind]

    # -- local state ----------------------------------------------------------------------

    def state(self) -> State:
        return FileStateStore(self.state_dir).load() or State()

    def journal(self) -> list[dict[str, Any]]:
        return FileStateStore(self.state_dir).read_journal()

    # -- the dashboard --------------------------------------------------------------------

    def request_spec(self, action: str, **overrides: Any) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "action": action,
            "nodeName": self.node_name,
            "nodeUid": self.node_uid,
            "bootId": self.boot_id,
            "requestId": random_hex(32),
            "acknowledgeDisruption": True,
            "allowExperimental": False,
            "experimentMode": False,
            "actorHash": hashlib.sha256(b"admin@example").hexdigest(),
            "planId": "",
        }
        spec.update(overrides)
        return spec

    def create_request(self, action: str, **overrides: Any) -> dict[str, Any]:
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "HostOperation",
            "metadata": {"name": self.request_name, "namespace": NAMESPACE},
            "spec": self.request_spec(action, **overrides),
        }
        created: dict[str, Any] = self.kube.dashboard_custom().create_namespaced_custom_object(
            GROUP, VERSION, NAMESPACE, PLURAL, body
        )
        # the host's clock and the apiserver's agree: the fake clock never lags the server's
        # creationTimestamp (setting up the world can take seconds on a loaded machine)
        stamp = datetime.fromisoformat(
            created["metadata"]["creationTimestamp"].replace("Z", "+00:00")
        )
        if self.clock.wall < stamp:
            self.clock.advance((stamp - self.clock.wall).total_seconds())
        return created

    def published(self) -> dict[str, Any]:
        """The report the dashboard reads: ticks once first if nothing is published yet."""
        report = self.report()
        if report is None:
            self.tick()
            report = self.report()
        assert report is not None, "no report published"
        return report

    def phase(self) -> str:
        obj = self.hostop()
        return str(((obj or {}).get("status") or {}).get("phase", ""))

    def drive(self, crash: CrashHook = no_crash, max_ticks: int = 30) -> str:
        """Tick until the operation ends, restarting the host when a shutdown is due and
        acting as the device plugin once registration waits for it.

        A scheduled shutdown happens one tick after it was first seen (ticks come every 15 s,
        `shutdown +1` a minute later), so the tick after `shutdown` ran can still see it."""
        pending = False
        for _ in range(max_ticks):
            self.tick(crash)
            if load_host(self.root).shutdown is not None:
                if pending:
                    self.boot()
                pending = not pending
            else:
                pending = False
            op = self.state().operation
            if op is not None and op.phase in ("Registering", "Validating"):
                self.registered()
            obj = self.hostop()
            status = (obj or {}).get("status") or {}
            if op is not None and op.terminal and status.get("phase") == op.phase:
                return op.phase
        raise AssertionError(f"the operation did not end in {max_ticks} ticks: {op}")

    def hostop(self) -> dict[str, Any] | None:
        return self.worker.get_hostoperation(NAMESPACE, self.request_name)

    def report(self) -> dict[str, Any] | None:
        node = self.worker.read_node(self.node_name)
        value = (
            node["metadata"].get("annotations", {}).get("appliance.magicstick.dev/host-management")
        )
        return json.loads(value) if value else None
