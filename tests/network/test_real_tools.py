"""The real tools on what the worker writes and reads: `netplan generate --root-dir` on the
simulated hosts' netplan before, during and after a trial, `netplan get --root-dir` against
the simulator's merge, and the real `ip -j` in a network namespace the test makes itself (no
traffic leaves it)."""

from __future__ import annotations

import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from magicstick_host.domain.parsers.netplan import netplan_network
from magicstick_host.domain.parsers.network import parse_default_routes, parse_ip_addresses
from magicstick_host.ports.netplan_yaml import load_netplan_yaml
from magicstick_host.sim.network_live import merge_netplan
from magicstick_host.sim.network_scenarios import NETWORK_SCENARIOS
from magicstick_host.sim.writer import load_host
from tests.network.helpers import CLUSTER_ETH, CLUSTER_WIFI, ethernet, sim_host, wifi
from tests.network.test_trial import make

pytestmark = pytest.mark.real_commands


def netplan(*args: str) -> subprocess.CompletedProcess[str]:
    assert shutil.which("netplan"), "netplan.io is required: apt-get install -y netplan.io"
    return subprocess.run(["netplan", *args], capture_output=True, text=True, timeout=60,
                          check=False)


def generated(root: Path) -> str:
    """What netplan rendered: the networkd files and the wpa_supplicant configurations."""
    paths = [*(root / "run/systemd/network").glob("*"), *(root / "run/netplan").glob("*")]
    return "".join(p.read_text() for p in sorted(paths))


@pytest.mark.parametrize("scenario", [s[0] for s in NETWORK_SCENARIOS])
def test_every_simulated_netplan_is_real_netplan(tmp_path: Path, scenario: str) -> None:
    root = sim_host(tmp_path, scenario)
    for path in (root / "etc/netplan").iterdir():
        path.chmod(0o600)
    proc = netplan("generate", "--root-dir", str(root))
    assert proc.returncode == 0, proc.stderr
    got = netplan("get", "--root-dir", str(root), "all")
    assert got.returncode == 0, got.stderr
    real = netplan_network(load_netplan_yaml(got.stdout))
    simulated = merge_netplan(load_host(root).network)  # type: ignore[arg-type]
    assert sorted(real.get("ethernets", {})) == sorted(simulated.get("ethernets", {}))
    assert sorted(real.get("wifis", {})) == sorted(simulated.get("wifis", {}))


@pytest.mark.parametrize(("scenario", "settings", "cluster", "expect"), [
    ("network-ethernet-dhcp", ethernet(), (CLUSTER_ETH,), "Address=10.20.0.33/24"),
    ("network-ethernet-dhcp", ethernet(interface="enp1s0", mode="dhcp", address=None,
                                       gateway=None, dns=["9.9.9.9"], metric=50),
     (CLUSTER_ETH,), "RouteMetric=50"),
    ("network-wifi-cluster", wifi(password="", metric=700), (CLUSTER_WIFI,), "RouteMetric=700"),
    ("network-wifi-open", wifi(ssid="Attic", password="attic-secret-42", hidden=True), (),
     "scan_ssid=1"),
    ("network-ethernet-static", ethernet(interface="enp1s0", address="192.168.1.20/24",
                                         gateway="192.168.1.254", metric=10),
     ("192.168.1.20",), "Gateway=192.168.1.254"),
])
def test_the_real_netplan_generate_accepts_the_trial(
    tmp_path: Path, scenario: str, settings: dict[str, object], cluster: tuple[str, ...],
    expect: str,
) -> None:
    t = make(tmp_path, scenario)
    record = t.run(settings, cluster)
    assert record.stage == "awaiting", record.message
    proc = netplan("generate", "--root-dir", str(t.root))
    assert proc.returncode == 0, proc.stderr
    assert expect in generated(t.root)
    assert t.fire_timer().trial.outcome == "rolled-back"  # type: ignore[union-attr]
    shutil.rmtree(t.root / "run/systemd/network")
    shutil.rmtree(t.root / "run/netplan", ignore_errors=True)
    proc = netplan("generate", "--root-dir", str(t.root))
    assert proc.returncode == 0, proc.stderr
    assert expect not in generated(t.root)


@pytest.fixture
def namespace() -> Iterator[str]:
    """A network namespace of the test's own with a veth pair inside it."""
    name = f"ms-{secrets.token_hex(4)}"
    ip = shutil.which("ip")
    assert ip, "iproute2 is required"

    def run(*args: str) -> None:
        subprocess.run([ip, *args], check=True, capture_output=True, timeout=30)

    run("netns", "add", name)
    try:
        run("-n", name, "link", "add", "msv0", "type", "veth", "peer", "name", "msv1")
        run("-n", name, "address", "add", "10.9.8.7/24", "dev", "msv0")
        run("-n", name, "address", "add", "fd09::7/64", "dev", "msv0")
        run("-n", name, "link", "set", "msv0", "up")
        run("-n", name, "link", "set", "msv1", "up")
        run("-n", name, "route", "add", "default", "via", "10.9.8.1", "dev", "msv0",
            "metric", "77")
        yield name
    finally:
        subprocess.run([ip, "netns", "del", name], capture_output=True, timeout=30, check=False)


def test_the_real_ip_output_parses(namespace: str) -> None:
    out = subprocess.run(["ip", "-n", namespace, "-j", "address", "show"], capture_output=True,
                         text=True, timeout=30, check=True).stdout
    links = {link.name: link for link in parse_ip_addresses(out)}
    assert {"lo", "msv0", "msv1"} <= set(links)
    msv0 = links["msv0"]
    assert msv0.up and len(msv0.mac) == 17
    assert [a.cidr for a in msv0.ipv4()] == ["10.9.8.7/24"]
    assert any(a.cidr == "fd09::7/64" and a.scope == "global" for a in msv0.addresses)
    routes = subprocess.run(["ip", "-n", namespace, "-j", "-4", "route", "show", "default"],
                            capture_output=True, text=True, timeout=30, check=True).stdout
    (route,) = parse_default_routes(routes)
    assert (route.dev, route.gateway, route.metric) == ("msv0", "10.9.8.1", 77)
