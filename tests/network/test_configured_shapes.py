"""What the report says of interfaces netplan configures without IPv4, of 802.1X Wi-Fi, and of
a default route with `on-link` (network.md, "The capability in the report", revised by #25):
`configuredMode: "none"` and still editable, `security: "wpa-eap"` (never `open`), and
`on-link: true` not editable with network.md's reason."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from magicstick_host import schemas
from magicstick_host.domain.network.capability import (
    InterfaceView,
    NetworkInventory,
    network_inventory,
    network_section,
)
from magicstick_host.domain.network.evidence import NetworkEvidence
from magicstick_host.domain.network.netplan_config import managed_network
from magicstick_host.domain.network.settings import (
    NetworkSettings,
    SettingsProblem,
    check_configure_settings,
)
from tests.network.helpers import CLUSTER_STATIC, KEY, ethernet, evidence, sim_host, wifi

_EVIDENCE: dict[str, NetworkEvidence] = {}


def with_effective(scenario: str, network: dict[str, Any],
                   cluster: tuple[str, ...] = ()) -> NetworkInventory:
    """The inventory of a simulated host (collected once per scenario) with `netplan get`
    answering `network`."""
    if scenario not in _EVIDENCE:
        with tempfile.TemporaryDirectory() as tmp:
            _EVIDENCE[scenario] = evidence(sim_host(Path(tmp), scenario))
    ev = _EVIDENCE[scenario]
    assert ev.netplan_get is not None
    return network_inventory(replace(ev, netplan_get={"network": network}), cluster)


def view_of(inv: NetworkInventory, name: str) -> InterfaceView:
    view = inv.interface(name)
    assert view is not None
    return view


def published_of(inv: NetworkInventory, name: str) -> dict[str, Any]:
    section = network_section(inv, KEY)
    assert schemas.errors("network", section) == []
    return next(i for i in section["interfaces"] if i["name"] == name)


NO_IPV4 = {
    "ipv6-only": {"dhcp4": False, "dhcp6": True, "accept-ra": True},
    "ipv6-static": {"addresses": ["fd00::5/64"], "routes": [{"to": "::/0", "via": "fd00::1"}]},
    "sr-iov-pf": {"virtual-function-count": "8", "embedded-switch-mode": "switchdev"},
    "offload": {"receive-checksum-offload": "false", "tcp-segmentation-offload": "no"},
    "empty": {},
    "no-entry": None,
}


@pytest.mark.parametrize("shape", sorted(NO_IPV4))
def test_no_ipv4_is_configured_mode_none_and_editable(shape: str) -> None:
    entry = NO_IPV4[shape]
    network: dict[str, Any] = {"version": 2, "ethernets": {}}
    if entry is not None:
        network["ethernets"]["enp1s0"] = entry
    inv = with_effective("network-ethernet-static", network)
    doc = published_of(inv, "enp1s0")
    assert (doc["configuredMode"], doc["configuredAddress"]) == ("none", "")
    assert doc["editable"] is True, doc.get("notEditableReason")
    # the administrator may give it DHCP or a static address (network.md): both pass the rules
    for settings in (ethernet(interface="enp1s0", address="192.168.1.30/24",
                              gateway="192.168.1.1"),
                     ethernet(interface="enp1s0", mode="dhcp", address=None, gateway=None)):
        approved = check_configure_settings(settings, inv)
        assert isinstance(approved, NetworkSettings), approved
        managed = managed_network(inv.effective, view_of(inv, "enp1s0"), approved)
        written = managed["ethernets"]["enp1s0"]
        for key, value in (entry or {}).items():  # IPv6, SR-IOV and offload keys are kept
            if isinstance(value, list):  # IPv6 addresses and routes, beside the new IPv4
                assert all(item in written[key] for item in value), key
            elif key != "dhcp4":
                assert written[key] == value, key


def test_a_static_interface_still_says_static_with_its_address() -> None:
    inv = with_effective("network-ethernet-static",
                         {"ethernets": {"enp1s0": {"addresses": ["fd00::5/64",
                                                                 "192.168.1.20/24"]}}})
    doc = published_of(inv, "enp1s0")
    assert (doc["configuredMode"], doc["configuredAddress"]) == ("static", "192.168.1.20/24")


def test_a_cluster_address_on_a_none_interface_may_only_stay() -> None:
    """The live cluster address on an interface netplan gives no IPv4 (added by hand, or by
    another tool): DHCP could change it, a static address must keep it."""
    inv = with_effective("network-ethernet-static",
                         {"ethernets": {"enp1s0": {"dhcp6": True}}}, (CLUSTER_STATIC,))
    assert view_of(inv, "enp1s0").cluster_addresses == (CLUSTER_STATIC,)
    refused = check_configure_settings(
        ethernet(interface="enp1s0", mode="dhcp", address=None, gateway=None), inv)
    assert isinstance(refused, SettingsProblem)
    assert "static address" not in refused.message  # it had none
    kept = check_configure_settings(
        ethernet(interface="enp1s0", address=f"{CLUSTER_STATIC}/24", gateway="192.168.1.1"), inv)
    assert isinstance(kept, NetworkSettings), kept


@pytest.mark.parametrize("management", ["eap", "802.1x", "EAP", "eap-sha256",
                                        "eap-suite-b-192", "some-future-kind"])
def test_an_8021x_wifi_network_is_never_open(management: str) -> None:
    ap = {"auth": {"key-management": management, "method": "peap", "identity": "corp\\me",
                   "password": "not-published"}}
    inv = with_effective("network-wifi-cluster", {"wifis": {"wlp3s0": {"dhcp4": True,
                                                      "access-points": {"Home": ap}}}})
    doc = published_of(inv, "wlp3s0")
    assert doc["security"] == "wpa-eap"
    assert doc["editable"] is False
    # without a saved password too (a client certificate): still not open
    ap = {"auth": {"key-management": management, "method": "tls",
                   "client-certificate": "/etc/ssl/me.pem"}}
    inv = with_effective("network-wifi-cluster", {"wifis": {"wlp3s0": {"dhcp4": True,
                                                      "access-points": {"Home": ap}}}})
    assert published_of(inv, "wlp3s0")["security"] == "wpa-eap"


@pytest.mark.parametrize(("ap", "security"), [
    ({}, "open"),
    (None, "open"),
    ({"auth": {"key-management": "none"}}, "open"),
    ({"password": "correct horse battery"}, "wpa-psk"),
    ({"auth": {"key-management": "psk", "password": "correct horse battery"}}, "wpa-psk"),
    ({"auth": {"key-management": "sae", "password": "correct horse battery"}}, "wpa-psk"),
])
def test_open_only_without_key_management(ap: Any, security: str) -> None:
    inv = with_effective("network-wifi-cluster",
                         {"wifis": {"wlp3s0": {"dhcp4": True, "access-points": {"Home": ap}}}})
    assert published_of(inv, "wlp3s0")["security"] == security


@pytest.mark.parametrize("on_link", ["true", True, "yes", "false"])
def test_an_on_link_default_route_is_not_editable(on_link: Any) -> None:
    inv = with_effective("network-ethernet-static", {"ethernets": {
        "enp1s0": {"addresses": ["192.168.1.20/24"],
                   "routes": [{"to": "default", "via": "10.0.0.1", "on-link": on_link}]}}})
    doc = published_of(inv, "enp1s0")
    assert doc["editable"] is False
    # network.md: "a default route with settings beyond `via` and `metric` (e.g. `on-link`)"
    assert "beyond via and metric" in doc["notEditableReason"]
    assert "on-link" in doc["notEditableReason"]
    assert isinstance(check_configure_settings(
        ethernet(interface="enp1s0", address="192.168.1.20/24", gateway="192.168.1.1"), inv),
        SettingsProblem)


def test_the_schema_refuses_static_without_an_address_and_none_with_one() -> None:
    inv = with_effective("network-ethernet-static",
                         {"ethernets": {"enp1s0": {"addresses": ["192.168.1.20/24"]}}})
    section = network_section(inv, KEY)
    eth = next(i for i in section["interfaces"] if i["name"] == "enp1s0")
    assert schemas.errors("network", section) == []
    eth["configuredAddress"] = ""
    assert schemas.errors("network", section) != []
    eth["configuredMode"] = "none"
    assert schemas.errors("network", section) == []
    eth["configuredAddress"] = "192.168.1.20/24"
    assert schemas.errors("network", section) != []


def test_wifi_none_interface() -> None:
    """A Wi-Fi interface with an access point but no IPv4 (IPv6 by router advertisements)."""
    inv = with_effective("network-wifi-cluster", {"wifis": {"wlp3s0": {
        "dhcp6": True, "access-points": {"Home": {"password": "correct horse battery"}}}}})
    doc = published_of(inv, "wlp3s0")
    assert (doc["configuredMode"], doc["security"]) == ("none", "wpa-psk")
    approved = check_configure_settings(wifi(password=""), inv)
    assert isinstance(approved, NetworkSettings), approved


@pytest.mark.parametrize(("v4", "v6", "refused"), [
    ({"route-metric": "0"}, None, True),  # found by tests/owners/test_netplan_get.py
    ({"route-metric": "50"}, {"route-metric": "50"}, False),
    ({"use-dns": "no"}, {}, True),
    ({"use-dns": "false"}, {"use-dns": "no"}, False),
    ({"route-metric": "4294967295"}, None, False),  # netplan's "unset"
])
def test_dhcp_overrides_networkd_cannot_render_withdraw_the_capability(
        v4: dict[str, str], v6: dict[str, str] | None, refused: bool) -> None:
    """`netplan generate` refuses DHCPv4 and DHCPv6 with different shared overrides, and a
    trial writes the whole configuration: no interface could be changed."""
    entry: dict[str, Any] = {"dhcp4": "true", "dhcp6": "true", "dhcp4-overrides": v4}
    if v6 is not None:
        entry["dhcp6-overrides"] = v6
    inv = with_effective("network-ethernet-static", {"ethernets": {"enp1s0": {"dhcp4": True},
                                                                   "eno9": entry}})
    assert inv.supported is (not refused), inv.message
    if refused:
        assert not any(i.editable for i in inv.interfaces)
