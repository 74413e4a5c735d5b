"""Each settings rule of network.md rejects its violation with its own message; valid settings
pass (also as a property), and the approved settings keep the password out of `redacted()`."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magicstick_host.domain.network.capability import NetworkInventory
from magicstick_host.domain.network.settings import (
    NetworkSettings,
    SettingsProblem,
    check_configure_settings,
    check_scan_settings,
)
from tests.network.helpers import (
    CLUSTER_ETH,
    CLUSTER_STATIC,
    CLUSTER_WIFI,
    HOME_PASSPHRASE,
    ethernet,
    inventory,
    sim_host,
    wifi,
)


@pytest.fixture(scope="module")
def dhcp_host(tmp_path_factory: pytest.TempPathFactory) -> NetworkInventory:
    root = sim_host(tmp_path_factory.mktemp("net"), "network-ethernet-dhcp")
    return inventory(root, (CLUSTER_ETH,))


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, NetworkInventory]:
    tmp = tmp_path_factory.mktemp("hosts")
    return {
        "static": inventory(sim_host(tmp, "network-ethernet-static", "s"), (CLUSTER_STATIC,)),
        "wifi": inventory(sim_host(tmp, "network-wifi-cluster", "w"), (CLUSTER_WIFI,)),
        "complex": inventory(sim_host(tmp, "network-not-editable", "c")),
        "bridge": inventory(sim_host(tmp, "network-unsupported", "b")),
    }


def problem(result: object) -> str:
    assert isinstance(result, SettingsProblem), result
    return result.message


def test_valid_static_ethernet(dhcp_host: NetworkInventory) -> None:
    approved = check_configure_settings(ethernet(), dhcp_host)
    assert approved == NetworkSettings(interface="enp2s0", kind="ethernet", mode="static",
                                       address="10.20.0.33/24", gateway="10.20.0.1",
                                       dns=("10.20.0.1",), metric=100)


def test_valid_wifi_and_redaction(dhcp_host: NetworkInventory) -> None:
    approved = check_configure_settings(wifi(ssid="Attic", password="x" * 12, hidden=True),
                                        dhcp_host)
    assert isinstance(approved, NetworkSettings)
    assert (approved.ssid, approved.hidden, approved.password) == ("Attic", True, "x" * 12)
    assert "x" * 12 not in str(approved.redacted())
    assert approved.redacted()["passwordGiven"] is True
    assert NetworkSettings.from_secret_json(approved.to_secret_json()) == approved


def test_an_empty_password_keeps_the_saved_key_of_the_same_ssid(
    dhcp_host: NetworkInventory,
) -> None:
    for ssid in ("Home", "Old Flat"):
        kept = check_configure_settings(wifi(ssid=ssid, password=""), dhcp_host)
        assert isinstance(kept, NetworkSettings) and kept.keeps_saved_key
    assert "no saved key" in problem(check_configure_settings(wifi(ssid="Attic", password=""),
                                                              dhcp_host))


def test_metric_defaults_to_the_interfaces_current_one(dhcp_host: NetworkInventory) -> None:
    settings_ = {k: v for k, v in wifi().items() if k != "metric"}
    approved = check_configure_settings(settings_, dhcp_host)
    assert isinstance(approved, NetworkSettings) and approved.metric == 600


RULES: list[tuple[str, dict[str, Any], str]] = [
    ("not an object", ["x"], "must be a JSON object"),  # type: ignore[list-item]
    ("unknown field", ethernet(mtu=9000), "unknown fields: mtu"),
    ("no interface", ethernet(interface=""), "must name an interface"),
    ("not physical", ethernet(interface="cni0"), "not a physical network interface"),
    ("unknown interface", ethernet(interface="eth9"), "not a physical network interface"),
    ("mode", ethernet(mode="manual"), 'mode must be "dhcp" or "static"'),
    ("metric bool", ethernet(metric=True), "metric must be an integer from 1 to 65535"),
    ("metric zero", ethernet(metric=0), "metric must be an integer from 1 to 65535"),
    ("metric big", ethernet(metric=65536), "metric must be an integer from 1 to 65535"),
    ("metric text", ethernet(metric="100"), "metric must be an integer from 1 to 65535"),
    ("dns five", ethernet(dns=["1.1.1.1"] * 5), "at most 4 IP addresses"),
    ("dns not list", ethernet(dns="1.1.1.1"), "at most 4 IP addresses"),
    ("dns bad", ethernet(dns=["1.1.1.300"]), "is not an IP address"),
    ("dns number", ethernet(dns=[1]), "is not an IP address"),
    ("no prefix", ethernet(address="10.20.0.33"), "IPv4 address with a prefix"),
    ("ipv6 static", ethernet(address="fd00::5/64"), "is not IPv4 with a prefix"),
    ("bad octet", ethernet(address="10.20.0.333/24"), "is not IPv4 with a prefix"),
    ("leading zero", ethernet(address="10.20.0.033/24"), "is not IPv4 with a prefix"),
    ("unspecified", ethernet(address="0.0.0.0/8", gateway=None), "cannot be a host address"),
    ("multicast", ethernet(address="224.0.0.5/24", gateway=None), "cannot be a host address"),
    ("loopback", ethernet(address="127.0.0.2/8", gateway=None), "cannot be a host address"),
    ("prefix 0", ethernet(address="10.20.0.33/0", gateway=None), "greater than 0"),
    ("network address", ethernet(address="10.20.0.0/24"), "network or broadcast"),
    ("broadcast address", ethernet(address="10.20.0.255/24"), "network or broadcast"),
    ("gateway outside", ethernet(gateway="10.21.0.1"), "is not inside 10.20.0.0/24"),
    ("gateway itself", ethernet(gateway="10.20.0.33"), "cannot be the interface's own"),
    ("gateway bad", ethernet(gateway="router"), "is not an IPv4 address"),
    ("dhcp address", ethernet(mode="dhcp"), "DHCP takes no static address or gateway"),
    ("dhcp gateway", ethernet(mode="dhcp", address=None), "DHCP takes no static address"),
    ("ethernet wifi fields", ethernet(ssid="Home"), "takes no Wi-Fi settings (ssid)"),
    ("ethernet hidden", ethernet(hidden=False), "takes no Wi-Fi settings (hidden)"),
    ("ssid empty", wifi(ssid=""), "SSID must be 1–32 bytes"),
    ("ssid long", wifi(ssid="é" * 17), "SSID must be 1–32 bytes"),
    ("ssid control", wifi(ssid="Ho\nme"), "SSID must be 1–32 bytes"),
    ("ssid number", wifi(ssid=5), "SSID must be 1–32 bytes"),
    ("security", wifi(security="wep"), 'security must be "open" or "wpa-psk"'),
    ("hidden", wifi(hidden="yes"), "hidden must be true or false"),
    ("password short", wifi(password="short"), "8–63 printable ASCII"),
    ("password long", wifi(password="x" * 64), "8–63 printable ASCII"),
    ("password unicode", wifi(password="pässwörter"), "8–63 printable ASCII"),
    ("password number", wifi(password=12345678), "must be text"),
    ("open with password", wifi(security="open", password="something1"), "takes no password"),
]


@pytest.mark.parametrize(("case", "settings_", "message"), RULES, ids=[r[0] for r in RULES])
def test_each_rule_rejects_its_violation(
    dhcp_host: NetworkInventory, case: str, settings_: Any, message: str
) -> None:
    assert message in problem(check_configure_settings(settings_, dhcp_host))


def test_a_64_hex_key_is_a_valid_wpa_key(dhcp_host: NetworkInventory) -> None:
    assert isinstance(check_configure_settings(wifi(password="ab" * 32), dhcp_host),
                      NetworkSettings)
    assert "8–63" in problem(check_configure_settings(wifi(password="zz" * 32), dhcp_host))


def test_supported_inventory_and_editable_interface(hosts: dict[str, NetworkInventory]) -> None:
    assert "bridges" in problem(check_configure_settings(
        ethernet(interface="enp1s0", mode="dhcp", address=None, gateway=None), hosts["bridge"]))
    assert "cannot be edited here: it has more than one IPv4" in problem(
        check_configure_settings(ethernet(), hosts["complex"]))


def test_the_cluster_address_may_only_stay(
    dhcp_host: NetworkInventory, hosts: dict[str, NetworkInventory]
) -> None:
    dhcp_ok = ethernet(interface="enp1s0", mode="dhcp", address=None, gateway=None)
    assert isinstance(check_configure_settings(dhcp_ok, dhcp_host), NetworkSettings)
    same = ethernet(interface="enp1s0", address=f"{CLUSTER_ETH}/24", gateway="192.168.1.1")
    assert isinstance(check_configure_settings(same, dhcp_host), NetworkSettings)
    moved = ethernet(interface="enp1s0", address="192.168.1.51/24", gateway="192.168.1.1")
    assert "cluster migration" in problem(check_configure_settings(moved, dhcp_host))
    to_dhcp = ethernet(interface="enp1s0", mode="dhcp", address=None, gateway=None)
    assert "could change it" in problem(check_configure_settings(to_dhcp, hosts["static"]))
    other_ssid = wifi(ssid="Cafe Libre", security="open", password=None)
    assert "cannot change" in problem(check_configure_settings(other_ssid, hosts["wifi"]))
    assert isinstance(check_configure_settings(wifi(password="a new key 123"), hosts["wifi"]),
                      NetworkSettings)


def test_scan_settings(dhcp_host: NetworkInventory) -> None:
    assert check_scan_settings({"interface": "wlp3s0"}, dhcp_host) == NetworkSettings(
        interface="wlp3s0", kind="wifi", mode="")
    assert "unknown fields: mode" in problem(check_scan_settings(
        {"interface": "wlp3s0", "mode": "dhcp"}, dhcp_host))
    assert "not a Wi-Fi interface" in problem(check_scan_settings({"interface": "enp1s0"},
                                                                  dhcp_host))
    assert "not a physical" in problem(check_scan_settings({"interface": "wlx0"}, dhcp_host))


_octet = st.integers(1, 254)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=200)
@given(host=_octet, prefix=st.integers(8, 30), gateway=_octet, metric=st.integers(1, 65535),
       dns=st.lists(st.sampled_from(["10.20.0.1", "1.1.1.1", "fd00::1"]), max_size=4),
       password=st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=8,
                        max_size=63),
       hidden=st.booleans())
def test_valid_settings_are_approved_as_given(
    dhcp_host: NetworkInventory, host: int, prefix: int, gateway: int, metric: int,
    dns: list[str], password: str, hidden: bool,
) -> None:
    address = f"10.20.{host}.{host}/{prefix}"
    net = ipaddress.IPv4Interface(address).network
    ip = ipaddress.IPv4Interface(address).ip
    gw = str(net.network_address + gateway % (net.num_addresses - 2) + 1)
    if ip in (net.network_address, net.broadcast_address) or gw == str(ip):
        return
    approved = check_configure_settings(ethernet(address=address, gateway=gw, metric=metric,
                                                 dns=dns), dhcp_host)
    assert isinstance(approved, NetworkSettings), approved
    assert (approved.address, approved.gateway, approved.metric, list(approved.dns)) == (
        address, gw, metric, dns)
    chosen = check_configure_settings(wifi(ssid="Attic", password=password, hidden=hidden,
                                           metric=metric), dhcp_host)
    assert isinstance(chosen, NetworkSettings) and chosen.password == password
    assert password not in repr(chosen.redacted())


def test_home_passphrase_fixture_is_a_valid_key(dhcp_host: NetworkInventory) -> None:
    assert isinstance(check_configure_settings(wifi(password=HOME_PASSPHRASE), dhcp_host),
                      NetworkSettings)
