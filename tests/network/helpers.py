"""Shared helpers of the network tests: simulated hosts, their inventory, settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from magicstick_host.collect.network import collect_network
from magicstick_host.domain.network.capability import NetworkInventory, network_inventory
from magicstick_host.domain.network.evidence import NetworkEvidence
from magicstick_host.ports.clock import Instant
from magicstick_host.ports.hostfs import RootedHostFS
from magicstick_host.sim.network_scenarios import (
    ATTIC_PASSPHRASE,
    ETH0_MAC,
    HOME_PASSPHRASE,
    WIFI_MAC,
)
from magicstick_host.sim.runner import SimRunner
from magicstick_host.sim.writer import create_host, load_host

__all__ = ["ATTIC_PASSPHRASE", "ETH0_MAC", "HOME_PASSPHRASE", "WIFI_MAC"]

CLUSTER_ETH = "192.168.1.50"  # network-ethernet-dhcp: DHCP lease of enp1s0
CLUSTER_STATIC = "192.168.1.20"  # network-ethernet-static
CLUSTER_WIFI = "192.168.1.60"  # network-wifi-cluster
KEY = bytes(range(32))


def sim_host(tmp: Path, scenario: str, name: str = "host") -> Path:
    root = tmp / name
    create_host(scenario, root)
    return root


def evidence(root: Path) -> NetworkEvidence:
    return collect_network(RootedHostFS(str(root)), SimRunner(root))


def inventory(root: Path, cluster: tuple[str, ...] = ()) -> NetworkInventory:
    return network_inventory(evidence(root), cluster)


def netplan_files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "etc/netplan").glob("*.yaml"))}


def boot_id(root: Path) -> str:
    return load_host(root).boot_id


@dataclass
class FakeClock:
    wall: datetime = field(default_factory=lambda: datetime(2026, 12, 1, 10, 0, tzinfo=UTC))
    boottime: float = 100.0

    def now(self) -> Instant:
        return Instant(wall=self.wall, boottime=self.boottime)

    def advance(self, seconds: float) -> None:
        self.wall += timedelta(seconds=seconds)
        self.boottime += seconds


def ethernet(interface: str = "enp2s0", **fields: Any) -> dict[str, Any]:
    return {"interface": interface, "mode": "static", "address": "10.20.0.33/24",
            "gateway": "10.20.0.1", "dns": ["10.20.0.1"], "metric": 100, **fields}


def wifi(**fields: Any) -> dict[str, Any]:
    return {"interface": "wlp3s0", "mode": "dhcp", "ssid": "Home", "security": "wpa-psk",
            "password": HOME_PASSPHRASE, "hidden": False, "metric": 600, **fields}
