"""The network parsers: ip -j, iw link/scan, netplan YAML. Examples and property tests."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magicstick_host.domain.parsers import ParseError
from magicstick_host.domain.parsers.netplan import netplan_bool, netplan_int, netplan_network
from magicstick_host.domain.parsers.network import (
    decode_iw_ssid,
    parse_default_routes,
    parse_ip_addresses,
    parse_iw_link,
    parse_iw_scan,
    ssid_text,
)
from magicstick_host.ports.netplan_yaml import dump_netplan_yaml, load_netplan_yaml
from magicstick_host.sim.network import iw_escape
from tests.parsers.strategies import garbage

IP_ADDRESS = json.dumps([
    {"ifindex": 1, "ifname": "lo", "flags": ["LOOPBACK", "UP", "LOWER_UP"],
     "operstate": "UNKNOWN", "address": "00:00:00:00:00:00",
     "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8, "scope": "host"}]},
    {"ifindex": 2, "ifname": "enp1s0", "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
     "mtu": 1500, "operstate": "UP", "link_type": "ether", "address": "58:47:CA:70:11:01",
     "addr_info": [
         {"family": "inet", "local": "192.168.1.50", "prefixlen": 24, "broadcast":
          "192.168.1.255", "scope": "global", "dynamic": True, "label": "enp1s0"},
         {"family": "inet6", "local": "fe80::5a47:caff:fe70:1101", "prefixlen": 64,
          "scope": "link"},
         {},
     ]},
    {"ifindex": 3, "ifname": "wg0", "flags": ["POINTOPOINT", "NOARP", "UP"],
     "operstate": "UNKNOWN", "link_type": "none", "addr_info": []},
])


def test_ip_addresses_read_flags_state_mac_and_addresses() -> None:
    lo, eth, wg = parse_ip_addresses(IP_ADDRESS)
    assert lo.name == "lo" and lo.ipv4()[0].cidr == "127.0.0.1/8"
    assert eth.up and eth.operstate == "UP" and eth.mac == "58:47:ca:70:11:01"
    assert [a.cidr for a in eth.addresses] == ["192.168.1.50/24", "fe80::5a47:caff:fe70:1101/64"]
    assert eth.addresses[1].scope == "link"
    assert wg.mac == "" and wg.addresses == ()


def test_default_routes_keep_gateway_dev_and_metric() -> None:
    text = json.dumps([
        {"dst": "default", "gateway": "192.168.1.1", "dev": "enp1s0", "protocol": "dhcp",
         "metric": 100, "flags": []},
        {"dst": "default", "dev": "wg0", "scope": "link", "flags": []},
    ])
    first, second = parse_default_routes(text)
    assert (first.dev, first.gateway, first.metric) == ("enp1s0", "192.168.1.1", 100)
    assert (second.dev, second.gateway, second.metric) == ("wg0", "", 0)
    assert parse_default_routes("[]") == ()


@pytest.mark.parametrize("text", [
    "", "{}", "[1]", '[{"flags": []}]', '[{"ifname": "x", "flags": "UP"}]',
    '[{"ifname": "x", "addr_info": [{"family": "inet", "local": "1.2.3.4", "prefixlen": 99}]}]',
    '[{"ifname": "x", "ifname": "y"}]',
])
def test_ip_addresses_refuse_what_they_cannot_read(text: str) -> None:
    with pytest.raises(ParseError):
        parse_ip_addresses(text)


@given(garbage)
def test_ip_parsers_raise_only_parse_errors(text: str) -> None:
    for parser in (parse_ip_addresses, parse_default_routes, parse_iw_link, parse_iw_scan,
                   load_netplan_yaml):
        with contextlib.suppress(ParseError):
            parser(text)


_address = st.tuples(st.sampled_from(["inet", "inet6"]),
                     st.sampled_from(["10.0.0.1", "192.168.7.9", "fd00::1", "2001:db8::5"]),
                     st.integers(0, 32), st.sampled_from(["global", "link", "host"]))
_link = st.fixed_dictionaries({
    "ifname": st.from_regex(r"[a-z][a-z0-9]{0,14}", fullmatch=True),
    "flags": st.lists(st.sampled_from(["UP", "LOWER_UP", "BROADCAST", "NO-CARRIER"]),
                      unique=True),
    "operstate": st.sampled_from(["UP", "DOWN", "DORMANT", "UNKNOWN"]),
    "address": st.from_regex(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", fullmatch=True),
    "addr_info": st.lists(_address.map(lambda a: {"family": a[0], "local": a[1],
                                                  "prefixlen": a[2], "scope": a[3]})),
})


@given(st.lists(_link, max_size=8))
def test_ip_addresses_keep_every_interface_and_address(links: list[dict[str, Any]]) -> None:
    parsed = parse_ip_addresses(json.dumps(links))
    assert [p.name for p in parsed] == [lk["ifname"] for lk in links]
    for link, got in zip(links, parsed, strict=True):
        assert got.mac == link["address"] and got.up == ("UP" in link["flags"])
        assert [a.cidr for a in got.addresses] == [
            f"{a['local']}/{a['prefixlen']}" for a in link["addr_info"]]


def test_iw_link_connected_and_not() -> None:
    text = ("Connected to 3c:84:6a:10:20:30 (on wlp3s0)\n\tSSID: Home\n\tfreq: 2437\n"
            "\tsignal: -48 dBm\n")
    assert parse_iw_link(text).connected_ssid == "Home"
    assert parse_iw_link("Not connected.\n").connected_ssid == ""
    escaped = "Connected to 3c:84:6a:10:20:30 (on wlp3s0)\n\tSSID: \\x20Caf\\xc3\\xa9 \\x5c\\x20\n"
    assert parse_iw_link(escaped).connected_ssid == " Café \\ "
    with pytest.raises(ParseError):
        parse_iw_link("Connected to 3c:84:6a:10:20:30 (on wlp3s0)\n\tfreq: 2437\n")


_ssid = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x2FF,
                              blacklist_categories=("Cs",)), min_size=1, max_size=10)


@given(_ssid)
def test_iw_escaping_round_trips_every_ssid(ssid: str) -> None:
    escaped = iw_escape(ssid)
    assert "\n" not in escaped and escaped == escaped.strip()
    assert decode_iw_ssid(escaped) == ssid.encode("utf-8")


def test_ssid_text_rules() -> None:
    assert ssid_text(b"Home") == "Home"
    assert ssid_text(b"") is None
    assert ssid_text(b"x" * 33) is None
    assert ssid_text(b"bad\x07bell") is None
    assert ssid_text(b"\xff\xfe") is None
    assert ssid_text("é".encode() * 16) == "é" * 16


SCAN = """\
BSS 3c:84:6a:10:20:30(on wlp3s0) -- associated
\tlast seen: 12.345s [boottime]
\tcapability: ESS Privacy ShortSlotTime (0x0411)
\tsignal: -48.00 dBm
\tSSID: Home
\tRSN:\t * Version: 1
\t\t * Group cipher: CCMP
BSS 02:1a:11:f0:00:01(on wlp3s0)
\tcapability: ESS ShortSlotTime (0x0401)
\tsignal: -63.00 dBm
\tSSID: Cafe\\x20Libre
BSS 02:1a:11:f0:00:02(on wlp3s0)
\tcapability: ESS Privacy (0x0011)
\tsignal: -55.00 dBm
\tSSID:
\tWPA:\t * Version: 1
"""


def test_iw_scan_reads_each_bss() -> None:
    home, cafe, hidden = parse_iw_scan(SCAN)
    assert (home.ssid, home.signal_dbm, home.rsn, home.privacy) == (b"Home", -48.0, True, True)
    assert (cafe.ssid, cafe.rsn, cafe.wpa, cafe.privacy) == (b"Cafe Libre", False, False, False)
    assert (hidden.ssid, hidden.wpa) == (b"", True)
    assert parse_iw_scan("") == ()
    with pytest.raises(ParseError):
        parse_iw_scan("junk before\nBSS 3c:84:6a:10:20:30(on wlp3s0)\n")


def test_netplan_yaml_keeps_scalars_as_netplan_sees_them() -> None:
    doc = load_netplan_yaml(
        "network:\n  ethernets:\n    eth0:\n      match: {macaddress: 52:54:00:12:34:56}\n"
        "      dhcp4: yes\n  wifis:\n    w:\n      access-points:\n        yes:\n"
        "          password: on12345678\n        open:\n"
    )
    eth = doc["network"]["ethernets"]["eth0"]
    assert eth["match"]["macaddress"] == "52:54:00:12:34:56"
    assert netplan_bool(eth["dhcp4"]) is True
    points = doc["network"]["wifis"]["w"]["access-points"]
    assert points == {"yes": {"password": "on12345678"}, "open": None}
    assert netplan_int("100") == 100 and netplan_int("-1") is None and netplan_int(True) is None
    assert netplan_bool("Off") is False and netplan_bool("maybe") is None


@pytest.mark.parametrize("text", [
    "a: 1\na: 2\n", "a: &x 1\nb: *x\n", "a: !!int 5\n", "[1, 2]\n",
    "a: 1\n---\nb: 2\n", "{[1]: 2}\n", "a: [\n",
])
def test_netplan_yaml_refuses_what_netplan_would_read_differently(text: str) -> None:
    with pytest.raises(ParseError):
        load_netplan_yaml(text)


def test_netplan_network_refuses_other_top_level_keys() -> None:
    assert netplan_network({}) == {}
    assert netplan_network({"network": None}) == {}
    with pytest.raises(ParseError):
        netplan_network({"network": {}, "other": 1})
    with pytest.raises(ParseError):
        netplan_network({"network": [1]})


_scalar = st.one_of(
    st.text(max_size=20), st.sampled_from(["yes", "on", "52:54:00:12:34:56", "0x10", "1e3",
                                           "~", "null", "007", "-", "a: b", "#x", "'q'"]),
    st.booleans(), st.integers(0, 10**6),
)
_doc = st.recursive(
    _scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=4)),
    max_leaves=20,
)


def _as_netplan_reads(value: Any) -> Any:
    """What the loader gives back for a dumped value: every scalar as its text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return [_as_netplan_reads(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_netplan_reads(v) for k, v in value.items()}
    return value


@given(st.dictionaries(st.text(min_size=1, max_size=8), _doc, max_size=5))
def test_netplan_yaml_dump_reads_back_the_same(doc: dict[str, Any]) -> None:
    text = dump_netplan_yaml(doc)
    assert load_netplan_yaml(text) == _as_netplan_reads(doc)
