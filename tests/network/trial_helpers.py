"""Driving a network trial on a simulated host without the tick: the steps in the order the
configure-network operation runs them, a power cycle, and the systemd side (timers, boot)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from magicstick_host.domain.network.netplan_config import managed_document, managed_network
from magicstick_host.domain.network.settings import NetworkSettings, check_configure_settings
from magicstick_host.domain.network.trial import TrialRecord
from magicstick_host.network import trial_steps as steps
from magicstick_host.network.rollback import (
    RollbackDeps,
    RollbackResult,
    run_boot_recovery,
    run_deadline_rollback,
)
from magicstick_host.network.trial_steps import TrialPorts
from magicstick_host.ports.network_store import NetworkStore
from magicstick_host.sim.boot import boot_host
from magicstick_host.sim.faults import SimulatedCrash
from magicstick_host.sim.network import boot_network, due_timers, start_network
from magicstick_host.sim.runner import SimRunner
from magicstick_host.sim.writer import load_host, write_host
from tests.network.helpers import FakeClock, inventory

REQUEST_ID = "a1b2c3d4e5f60718293a4b5c6d7e8f90"


class CrashAt:
    """Raise SimulatedCrash at the named crash point (the process dies there)."""

    def __init__(self, point: str | None = None) -> None:
        self.point = point
        self.seen: list[str] = []

    def __call__(self, point: str) -> None:
        self.seen.append(point)
        if point == self.point:
            raise SimulatedCrash(point)


@dataclass
class Trial:
    root: Path
    state_dir: Path
    clock: FakeClock
    crash: CrashAt

    @property
    def ports(self) -> TrialPorts:
        return TrialPorts(root=str(self.root), state_dir=self.state_dir,
                          runner=SimRunner(self.root), clock=self.clock, crash=self.crash)

    @property
    def store(self) -> NetworkStore:
        return NetworkStore(self.state_dir)

    def deps(self) -> RollbackDeps:
        return RollbackDeps(ports=self.ports, boot_id=lambda: load_host(self.root).boot_id)

    def approve(self, settings: dict[str, Any], cluster: tuple[str, ...] = ()) -> NetworkSettings:
        approved = check_configure_settings(settings, inventory(self.root, cluster))
        assert isinstance(approved, NetworkSettings), approved
        return approved

    def run(self, settings: dict[str, Any], cluster: tuple[str, ...] = ()) -> TrialRecord:
        """Intake to AwaitingConfirmation: settings file, backup, write, generate, apply."""
        inv = inventory(self.root, cluster)
        approved = self.approve(settings, cluster)
        self.store.write_settings(approved.to_secret_json())
        view = inv.interface(approved.interface)
        assert view is not None
        with self.store.lock(wait_s=1):
            trial, detail = steps.begin(
                self.ports, request_id=REQUEST_ID, request_uid="op-uid-1",
                settings=approved.redacted(), boot_id=load_host(self.root).boot_id,
                cluster_addresses=inv.cluster_addresses)
            assert trial is not None, detail
            saved = self.store.read_settings()
            assert saved is not None
            secret = NetworkSettings.from_secret_json(saved)
            document = managed_document(managed_network(inv.effective, view, secret))
            trial = steps.write_and_generate(self.ports, trial, document)
            if trial.finished:
                return trial
            return steps.apply_with_deadline(self.ports, trial, load_host(self.root).boot_id)

    def timers(self) -> dict[str, int]:
        return due_timers(load_host(self.root))

    def fire_timer(self) -> RollbackResult:
        """systemd starts the rollback service once the transient timer elapses."""
        timers = self.timers()
        assert "magicstick-host-network-rollback" in timers, timers
        self.clock.advance(timers["magicstick-host-network-rollback"])
        host = load_host(self.root)
        assert host.network is not None
        host.network.timers.pop("magicstick-host-network-rollback")  # elapsed: unloaded
        write_host(host, self.root)
        return run_deadline_rollback(self.deps())

    def power_cycle(self) -> RollbackResult:
        """Power loss and boot: the boot recovery runs before the network starts."""
        boot_host(self.root)
        host = load_host(self.root)
        boot_network(host)
        write_host(host, self.root)
        self.clock.boottime = 20.0
        self.crash = CrashAt()
        result = run_boot_recovery(self.deps())
        host = load_host(self.root)
        start_network(host)
        write_host(host, self.root)
        return result
