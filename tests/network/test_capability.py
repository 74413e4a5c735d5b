"""The `network` capability on simulated hosts: inventory fields, editable and supported rules,
the keyed id, and that no password or key is ever published."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from magicstick_host import schemas
from magicstick_host.domain.network.capability import (
    network_id,
    network_inventory,
    network_section,
    node_internal_ips,
)
from magicstick_host.domain.network.evidence import NetplanFile
from tests.network.helpers import (
    ATTIC_PASSPHRASE,
    CLUSTER_ETH,
    CLUSTER_WIFI,
    HOME_PASSPHRASE,
    KEY,
    evidence,
    inventory,
    sim_host,
)


def published(root: Path, cluster: tuple[str, ...] = ()) -> dict:  # type: ignore[type-arg]
    section = network_section(inventory(root, cluster), KEY)
    assert schemas.errors("network", section) == []
    return section


def by_name(section: dict) -> dict:  # type: ignore[type-arg]
    return {i["name"]: i for i in section["interfaces"]}


def test_dhcp_host_publishes_every_field(tmp_path: Path) -> None:
    section = published(sim_host(tmp_path, "network-ethernet-dhcp"), (CLUSTER_ETH,))
    assert section["supported"] is True
    ifs = by_name(section)
    assert sorted(ifs) == ["enp1s0", "enp2s0", "wlp3s0"]  # cni0 is not physical
    eth = ifs["enp1s0"]
    assert eth == {
        "name": "enp1s0", "kind": "ethernet", "mac": "58:47:ca:70:11:01", "state": "up",
        "addresses": ["192.168.1.50/24"], "editable": True, "scanSupported": False,
        "clusterAddresses": [CLUSTER_ETH], "gateway": "192.168.1.1", "configuredMode": "dhcp",
        "configuredAddress": "", "configuredGateway": "", "dns": [], "metric": 100,
    }
    lab = ifs["enp2s0"]
    assert (lab["configuredMode"], lab["configuredAddress"], lab["dns"]) == (
        "static", "10.20.0.10/24", ["10.20.0.1"])
    assert lab["addresses"] == ["10.20.0.10/24", "fd20::10/64"]
    wifi = ifs["wlp3s0"]
    assert {k: wifi[k] for k in ("configuredSsid", "hasPassword", "security", "hidden",
                                 "connectedSsid", "metric", "scanSupported")} == {
        "configuredSsid": "Home", "hasPassword": True, "security": "wpa-psk", "hidden": False,
        "connectedSsid": "Home", "metric": 600, "scanSupported": True}
    assert "configuredSsid" not in eth


def test_no_password_or_key_is_ever_published(tmp_path: Path) -> None:
    for scenario in ("network-ethernet-dhcp", "network-wifi-cluster", "network-wifi-hidden",
                     "network-not-editable"):
        root = sim_host(tmp_path, scenario, scenario)
        text = json.dumps(network_section(inventory(root, (CLUSTER_WIFI,)), KEY))
        for secret in (HOME_PASSPHRASE, ATTIC_PASSPHRASE, "an-older-saved-key", "not-a-psk"):
            assert secret not in text, scenario
        assert KEY.hex() not in text


def test_open_and_hidden_wifi(tmp_path: Path) -> None:
    wifi = by_name(published(sim_host(tmp_path, "network-wifi-open", "o")))["wlp3s0"]
    assert (wifi["security"], wifi["hasPassword"], wifi["connectedSsid"]) == (
        "open", False, "Cafe Libre")
    hidden = by_name(published(sim_host(tmp_path, "network-wifi-hidden", "h")))["wlp3s0"]
    assert (hidden["hidden"], hidden["connectedSsid"], hidden["security"]) == (
        True, "Attic", "wpa-psk")


def test_cluster_address_on_wifi(tmp_path: Path) -> None:
    ifs = by_name(published(sim_host(tmp_path, "network-wifi-cluster"), (CLUSTER_WIFI,
                                                                          "10.99.0.1")))
    assert ifs["wlp3s0"]["clusterAddresses"] == [CLUSTER_WIFI]
    assert ifs["enp1s0"]["clusterAddresses"] == []


def test_non_editable_shapes_say_why(tmp_path: Path) -> None:
    ifs = by_name(published(sim_host(tmp_path, "network-not-editable")))
    assert ifs["enp1s0"]["editable"] is True
    assert ifs["enp2s0"]["editable"] is False
    assert "more than one IPv4" in ifs["enp2s0"]["notEditableReason"]
    assert ifs["wlp3s0"]["editable"] is False
    assert "key management" in ifs["wlp3s0"]["notEditableReason"]


def test_a_bridge_withdraws_the_capability(tmp_path: Path) -> None:
    section = published(sim_host(tmp_path, "network-unsupported"))
    assert section["supported"] is False
    assert "bridges" in section["message"]
    assert all(not i["editable"] for i in section["interfaces"])


@pytest.mark.parametrize(("entry", "why"), [
    ({"addresses": ["10.0.0.2/24", "10.0.0.3/24"]}, "more than one IPv4"),
    ({"dhcp4": True, "addresses": ["10.0.0.2/24"]}, "both DHCP"),
    ({"addresses": ["10.0.0.2/24"], "routes": [{"to": "10.9.0.0/16", "via": "10.0.0.1"}]},
     "other than the default"),
    ({"addresses": ["10.0.0.2/24"], "routes": [{"to": "default", "via": "10.0.0.1",
                                                 "table": "7"}]}, "does not manage"),
    ({"dhcp4": True, "routing-policy": [{"from": "10.0.0.0/8", "table": "7"}]}, "policy"),
    ({"dhcp4": True, "auth": {"key-management": "802.1x"}}, "802.1X"),
    ({"dhcp4": True, "networkmanager": {"uuid": "x"}}, "NetworkManager"),
    ({"dhcp4": True, "openvswitch": {}}, "Open vSwitch"),
    ({"dhcp4": True, "match": {"driver": "r8169"}}, "wildcard or driver"),
    ({"dhcp4": True, "match": {"name": "enp*"}}, "wildcard or driver"),
])
def test_editable_rules(tmp_path: Path, entry: dict, why: str) -> None:  # type: ignore[type-arg]
    root = sim_host(tmp_path, "network-ethernet-static")
    ev = evidence(root)
    assert ev.netplan_get is not None
    effective = {"network": {"version": 2, "ethernets": {"enp1s0": entry}}}
    view = network_inventory(replace(ev, netplan_get=effective), ()).interface("enp1s0")
    assert view is not None and not view.editable
    assert why in view.why_not_editable


def test_ipv6_and_match_keys_do_not_stop_editing(tmp_path: Path) -> None:
    ev = evidence(sim_host(tmp_path, "network-ethernet-static"))
    effective = {"network": {"ethernets": {"lan": {
        "match": {"macaddress": "58:47:CA:70:11:01"}, "set-name": "enp1s0", "dhcp4": "yes",
        "dhcp6": True, "accept-ra": True, "addresses": ["fd00::5/64"],
        "routes": [{"to": "::/0", "via": "fd00::1"}]}}}}
    view = network_inventory(replace(ev, netplan_get=effective), ()).interface("enp1s0")
    assert view is not None and view.editable, view.why_not_editable
    assert view.netplan_entry == ("ethernets", "lan")


@pytest.mark.parametrize("change", ["symlink", "too-large", "too-many", "foreign", "problem",
                                    "unreadable-dir", "no-netplan-get"])
def test_supported_rules(tmp_path: Path, change: str) -> None:
    ev = evidence(sim_host(tmp_path, "network-ethernet-dhcp"))
    files = ev.netplan_files or ()
    if change == "symlink":
        ev = replace(ev, netplan_files=(*files, NetplanFile("/etc/netplan/x.yaml", None, "",
                                                            symlink=True)))
    elif change == "too-large":
        ev = replace(ev, netplan_files=(NetplanFile("/etc/netplan/x.yaml", None, "",
                                                    problem="too large"),))
    elif change == "too-many":
        many = tuple(NetplanFile(f"/etc/netplan/{n:02}.yaml", "", "0" * 64) for n in range(33))
        ev = replace(ev, netplan_files=many)
    elif change == "foreign":
        ev = replace(ev, foreign_netplan_files=("/run/netplan/90-x.yaml",))
    elif change == "problem":
        ev = replace(ev, problems=("ip -j address show: timed out",))
    elif change == "unreadable-dir":
        ev = replace(ev, netplan_files=None)
    else:
        ev = replace(ev, netplan_get=None)
    inv = network_inventory(ev, ())
    assert inv.supported is False
    assert inv.message.startswith("Network settings cannot be changed here:")
    assert all(not i.editable for i in inv.interfaces)


def test_collector_sees_symlinks_sizes_and_foreign_dirs(tmp_path: Path) -> None:
    root = sim_host(tmp_path, "network-ethernet-dhcp")
    (root / "etc/netplan/70-link.yaml").symlink_to("50-cloud-init.yaml")
    assert "symlink" in inventory(root).message
    (root / "etc/netplan/70-link.yaml").unlink()
    (root / "etc/netplan/80-big.yaml").write_text("#" * (256 * 1024 + 1))
    assert "larger than 256 KiB" in inventory(root).message
    (root / "etc/netplan/80-big.yaml").unlink()
    (root / "run/netplan").mkdir(parents=True)
    (root / "run/netplan/10-x.yaml").write_text("network: {}\n")
    assert "/run/netplan/10-x.yaml" in inventory(root).message
    os.unlink(root / "run/netplan/10-x.yaml")
    assert inventory(root).supported is True


def test_the_id_is_keyed_and_covers_snapshot_mac_kind_and_cluster(tmp_path: Path) -> None:
    root = sim_host(tmp_path, "network-ethernet-dhcp")
    inv = inventory(root, (CLUSTER_ETH,))
    base = network_id(inv, KEY)
    assert base == network_id(inventory(root, (CLUSTER_ETH,)), KEY)  # stable
    assert network_id(inv, bytes(32)) != base  # keyed
    assert network_id(inventory(root, ()), KEY) != base  # cluster addresses
    renamed = replace(inv, interfaces=(replace(inv.interfaces[0], mac="00:00:00:00:00:01"),
                                       *inv.interfaces[1:]))
    assert network_id(renamed, KEY) != base
    path = root / "etc/netplan/60-lab-and-wifi.yaml"
    path.write_text(path.read_text() + "# edited\n")
    assert network_id(inventory(root, (CLUSTER_ETH,)), KEY) != base  # the snapshot
    assert len(base) == 64


def test_without_a_key_the_section_is_withdrawn(tmp_path: Path) -> None:
    section = network_section(inventory(sim_host(tmp_path, "network-ethernet-dhcp")), None,
                              key_problem="the key file is unreadable")
    assert section["supported"] is False and "unreadable" in section["message"]
    assert schemas.errors("network", section) == []


def test_node_internal_ips() -> None:
    node = {"status": {"addresses": [{"type": "InternalIP", "address": "192.168.1.50"},
                                     {"type": "Hostname", "address": "box"},
                                     {"type": "InternalIP", "address": "fd00::50"}]}}
    assert node_internal_ips(node) == ("192.168.1.50", "fd00::50")
    assert node_internal_ips(None) == ()
    assert node_internal_ips({"status": {"addresses": "x"}}) == ()


class _Without:
    """The simulator, with some tools missing or failing."""

    def __init__(self, root: Path, missing: tuple[str, ...] = (), failing: tuple[str, ...] = ()):
        from magicstick_host.sim.runner import SimRunner

        self.inner = SimRunner(root)
        self.missing, self.failing = missing, failing

    def run(self, argv, *, timeout, env=None, stdout_path=None):  # type: ignore[no-untyped-def]
        from magicstick_host.ports.runner import NOT_FOUND, TIMED_OUT, CommandResult

        if argv[0] in self.missing:
            return CommandResult(tuple(argv), NOT_FOUND, "", f"{argv[0]}: not found")
        if argv[0] in self.failing:
            return CommandResult(tuple(argv), TIMED_OUT, "", "timed out")
        return self.inner.run(argv, timeout=timeout)


@pytest.mark.parametrize(("missing", "failing", "why"), [
    (("ip",), (), "ip -j address show: not found"),
    ((), ("netplan",), "netplan get all: timed out"),
    (("netplan",), (), "netplan get all: not found"),
])
def test_a_tool_that_cannot_answer_withdraws_the_capability(
    tmp_path: Path, missing: tuple[str, ...], failing: tuple[str, ...], why: str
) -> None:
    from magicstick_host.collect.network import collect_network
    from magicstick_host.ports.hostfs import RootedHostFS

    root = sim_host(tmp_path, "network-ethernet-dhcp")
    ev = collect_network(RootedHostFS(str(root)), _Without(root, missing, failing))
    inv = network_inventory(ev, ())
    assert inv.supported is False and why in inv.message


def test_without_iw_wifi_cannot_scan_but_the_rest_stays(tmp_path: Path) -> None:
    from magicstick_host.collect.network import collect_network
    from magicstick_host.ports.hostfs import RootedHostFS

    root = sim_host(tmp_path, "network-ethernet-dhcp")
    ev = collect_network(RootedHostFS(str(root)), _Without(root, missing=("iw",)))
    assert ev.iw_present is False and ev.problems == ()
    inv = network_inventory(ev, ())
    assert inv.supported is True
    wifi = inv.interface("wlp3s0")
    assert wifi is not None and not wifi.editable and not wifi.scan_supported
    assert "`iw` is missing" in wifi.why_not_editable
    lab = inv.interface("enp2s0")
    assert lab is not None and lab.editable
