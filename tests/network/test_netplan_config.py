"""The managed netplan file: for random valid settings it keeps every other interface,
credential and IPv6 setting of the original configuration (a property test), and the real
`netplan generate` accepts what it writes."""

from __future__ import annotations

import copy
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magicstick_host.domain.network.capability import InterfaceView
from magicstick_host.domain.network.netplan_config import managed_document, managed_network
from magicstick_host.domain.network.settings import NetworkSettings
from magicstick_host.domain.parsers.netplan import netplan_network
from magicstick_host.ports.netplan_yaml import load_netplan_yaml, render_managed
from tests.network.test_parsers import _as_netplan_reads

IPV4_KEYS = frozenset({"addresses", "routes", "gateway4", "dhcp4", "dhcp4-overrides",
                       "dhcp6-overrides", "nameservers", "access-points"})

_mac = st.from_regex(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", fullmatch=True)
_ipv6_address = st.sampled_from(["fd00::5/64", "2001:db8::7/64", "fd12:3456::1/48"])
_password = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=8,
                    max_size=20)
_ssid = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x24F,
                              blacklist_categories=("Cs", "Cc")), min_size=1, max_size=10)


@st.composite
def _entry(draw: st.DrawFn, *, wifi: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    # (the originals must be valid netplan: networkd matches Wi-Fi by name only)
    if not wifi and draw(st.booleans()):
        entry["match"] = {"macaddress": draw(_mac)}
        entry["set-name"] = draw(st.sampled_from(["lan0", "wan0", "enp9s0"]))
    mode = draw(st.sampled_from(["dhcp", "static", "none"]))
    v6 = draw(st.lists(_ipv6_address, unique=True, max_size=2))
    v4 = ["192.168.9.4/24"] if mode == "static" else []
    if v4 or v6:
        entry["addresses"] = v4 + v6
    dhcp6 = draw(st.sampled_from([None, True, False, "no"]))
    if dhcp6 is not None:
        entry["dhcp6"] = dhcp6
    if mode == "dhcp":
        entry["dhcp4"] = draw(st.sampled_from([True, "yes", "true"]))
        if draw(st.booleans()):
            # networkd wants the same DHCPv4 and DHCPv6 overrides when both run
            entry["dhcp4-overrides"] = {"use-dns": False, "route-metric": 300}
            if dhcp6 is True:
                entry["dhcp6-overrides"] = {"use-dns": False, "route-metric": 300}
    routes: list[dict[str, Any]] = []
    if mode == "static" and draw(st.booleans()):
        routes.append({"to": "default", "via": "192.168.9.1"})
    if v6 and draw(st.booleans()):
        routes.append({"to": "::/0", "via": "fd00::1", "metric": 1024})
    if routes:
        entry["routes"] = routes
    for key, values in (("accept-ra", [True, False]),
                        ("ipv6-privacy", [True]), ("link-local", [["ipv6"], []]),
                        ("ipv6-mtu", [1280]), ("mtu", [1500, 9000]), ("optional", [True])):
        if draw(st.booleans()):
            entry[key] = draw(st.sampled_from(values))
    if draw(st.booleans()):
        entry["nameservers"] = {"addresses": ["192.168.9.1", "fd00::53"],
                                "search": ["lan", "example.org"]}
    if wifi:
        points: dict[str, Any] = {}
        for ssid in draw(st.lists(_ssid, min_size=1, max_size=3, unique=True)):
            kind = draw(st.sampled_from(["password", "auth", "open"]))
            ap: dict[str, Any] = {}
            if kind == "password":
                ap["password"] = draw(_password)
            elif kind == "auth":
                ap["auth"] = {"key-management": "psk", "password": draw(_password)}
            if draw(st.booleans()):
                ap["hidden"] = True
            points[ssid] = ap
        entry["access-points"] = points
    return entry


@st.composite
def _config(draw: st.DrawFn) -> dict[str, Any]:
    network: dict[str, Any] = {"version": 2}
    if draw(st.booleans()):
        network["renderer"] = "networkd"
    ids = draw(st.lists(st.sampled_from(["eth0", "eth1", "enp1s0", "lan"]), min_size=1,
                        max_size=3, unique=True))
    network["ethernets"] = {i: draw(_entry(wifi=False)) for i in ids}
    wifi_ids = draw(st.lists(st.sampled_from(["wlan0", "wlp3s0"]), max_size=2, unique=True))
    if wifi_ids:
        network["wifis"] = {i: draw(_entry(wifi=True)) for i in wifi_ids}
    return network


def _view(name: str, kind: str, entry_id: str, section: str) -> InterfaceView:
    return InterfaceView(
        name=name, kind=kind, mac="02:00:00:00:00:09", state="up", addresses=(), ipv4=(),
        editable=True, why_not_editable="", scan_supported=False, cluster_addresses=(),
        gateway="", configured_mode="dhcp", configured_address="", configured_gateway="",
        dns=(), metric=100, netplan_entry=(section, entry_id),
    )


@st.composite
def _change(draw: st.DrawFn, network: dict[str, Any]) -> tuple[InterfaceView, NetworkSettings]:
    choices = [("ethernets", i) for i in network["ethernets"]]
    choices += [("wifis", i) for i in network.get("wifis", {})]
    section, entry_id = draw(st.sampled_from(choices))
    kind = "wifi" if section == "wifis" else "ethernet"
    view = _view(f"if{len(entry_id)}", kind, entry_id, section)
    mode = draw(st.sampled_from(["dhcp", "static"]))
    fields: dict[str, Any] = {
        "interface": view.name, "kind": kind, "mode": mode,
        "metric": draw(st.integers(1, 65535)),
        "dns": tuple(draw(st.lists(st.sampled_from(["10.1.1.1", "9.9.9.9", "fd00::1"]),
                                   max_size=4))),
    }
    if mode == "static":
        fields["address"] = "10.44.0.7/16"
        fields["gateway"] = draw(st.sampled_from(["", "10.44.0.1"]))
    if kind == "wifi":
        points = network["wifis"][entry_id]["access-points"]
        ssid = draw(st.sampled_from([*points, "Brand New"]))
        saved = points.get(ssid, {})
        has_key = "password" in saved or "auth" in saved
        security = draw(st.sampled_from(["open", "wpa-psk"]))
        password = "" if security == "open" else draw(
            st.one_of(_password, st.just("")) if has_key else _password)
        fields.update(ssid=ssid, security=security, password=password, hidden=draw(st.booleans()))
    return view, NetworkSettings(**fields)


def _passwords(network: dict[str, Any]) -> list[str]:
    found = []
    for entry in (network.get("wifis") or {}).values():
        for ap in entry.get("access-points", {}).values():
            value = ap.get("password") or (ap.get("auth") or {}).get("password")
            if value:
                found.append(str(value))
    return found


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_written_netplan_keeps_everything_else(data: st.DataObject) -> None:
    original = data.draw(_config())
    view, chosen = data.draw(_change(original))
    before = copy.deepcopy(original)
    text = render_managed(managed_document(managed_network(original, view, chosen)))
    assert original == before  # the input is not touched
    written = netplan_network(load_netplan_yaml(text))
    reads = _as_netplan_reads(original)
    section, entry_id = view.netplan_entry  # type: ignore[misc]
    # the renderer, the version, every other interface: exactly as they were
    for key in ("renderer", "version"):
        assert written.get(key) == reads.get(key)
    for sec in ("ethernets", "wifis"):
        for other, entry in (reads.get(sec) or {}).items():
            if (sec, other) != (section, entry_id):
                assert written[sec][other] == entry, (sec, other)
    old, new = reads[section][entry_id], written[section][entry_id]
    # everything but the IPv4 addressing, DNS servers and the chosen access point is kept
    assert {k: v for k, v in old.items() if k not in IPV4_KEYS} == {
        k: v for k, v in new.items() if k not in IPV4_KEYS}
    v6_overrides = {k: v for k, v in (new.get("dhcp6-overrides") or {}).items()
                    if k != "route-metric"}
    assert v6_overrides == {k: v for k, v in (old.get("dhcp6-overrides") or {}).items()
                            if k != "route-metric"}
    v6 = [a for a in old.get("addresses", []) if ":" in a]
    assert [a for a in new.get("addresses", []) if ":" in a] == v6
    assert [r for r in new.get("routes", []) if ":" in r.get("via", "")] == [
        r for r in old.get("routes", []) if ":" in r.get("via", "")]
    assert (new.get("nameservers") or {}).get("search") == (old.get("nameservers") or {}).get(
        "search")
    # the change itself
    v4 = [a for a in new.get("addresses", []) if ":" not in a]
    assert v4 == ([chosen.address] if chosen.mode == "static" else [])
    assert new["dhcp4"] == ("true" if chosen.mode == "dhcp" else "false")
    assert (new.get("nameservers") or {}).get("addresses", []) == list(chosen.dns)
    # every credential of the original configuration is still there, unless replaced
    replaced = ""
    if chosen.kind == "wifi":
        ap = new["access-points"][chosen.ssid]
        old_ap = old["access-points"].get(chosen.ssid, {})
        if chosen.security == "open":
            assert "password" not in ap and "auth" not in ap
            replaced = old_ap.get("password") or (old_ap.get("auth") or {}).get("password", "")
        elif chosen.password:
            assert ap["auth"] == {"key-management": "psk", "password": chosen.password}
            replaced = old_ap.get("password") or (old_ap.get("auth") or {}).get("password", "")
        else:
            assert {k: v for k, v in ap.items() if k != "hidden"} == {
                k: v for k, v in old_ap.items() if k != "hidden"}
        for ssid, other in old["access-points"].items():
            if ssid != chosen.ssid:
                assert new["access-points"][ssid] == other
    for password in _passwords(reads):
        assert password in _passwords(written) or password == replaced


def netplan_generate(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["netplan", "generate", "--root-dir", str(root)], capture_output=True,
                          text=True, timeout=60, check=False)


@pytest.mark.real_commands
@settings(max_examples=25, deadline=None)
@given(st.data())
def test_the_real_netplan_generate_accepts_what_is_written(data: st.DataObject) -> None:
    assert shutil.which("netplan"), "netplan.io is required (apt-get install -y netplan.io)"
    original = data.draw(_config())
    view, chosen = data.draw(_change(original))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "etc/netplan").mkdir(parents=True)
        target = root / "etc/netplan/90-magicstick-network.yaml"
        target.write_text(render_managed(managed_document(managed_network(original, view, chosen))))
        target.chmod(0o600)
        proc = netplan_generate(root)
        assert proc.returncode == 0, proc.stderr + target.read_text()
        assert list((root / "run/systemd/network").glob("*.network"))
