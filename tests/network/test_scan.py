"""Shaping a Wi-Fi scan for the report: one entry per SSID (the strongest), sorted by signal,
at most 32, valid SSIDs only, secured/open."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from magicstick_host import schemas
from magicstick_host.domain.network.scan import scan_networks, scan_section
from magicstick_host.domain.parsers.network import ScannedBss, parse_iw_scan, ssid_text
from magicstick_host.effects.network import scan_wifi
from magicstick_host.sim.runner import SimRunner
from tests.network.helpers import sim_host


def bss(ssid: bytes, signal: float | None, *, rsn: bool = False, wpa: bool = False,
        privacy: bool = False) -> ScannedBss:
    return ScannedBss("02:00:00:00:00:01", ssid, signal, privacy, rsn, wpa)


def test_one_entry_per_ssid_the_strongest_sorted_by_signal() -> None:
    found = [bss(b"Home", -71.0, rsn=True), bss(b"Cafe", -63.0), bss(b"Home", -48.4, rsn=True),
             bss(b"", -30.0, rsn=True), bss(b"Old", None, wpa=True), bss(b"Wep", -80.0,
                                                                          privacy=True)]
    assert scan_networks(found) == [
        {"ssid": "Home", "signal": -48, "security": "secured"},
        {"ssid": "Cafe", "signal": -63, "security": "open"},
        {"ssid": "Wep", "signal": -80, "security": "secured"},
        {"ssid": "Old", "signal": -100, "security": "secured"},
    ]


_ssids = st.one_of(st.binary(max_size=34), st.sampled_from([b"A", b"B", b"C", b"x" * 32]))


@given(st.lists(st.tuples(_ssids, st.one_of(st.none(), st.floats(-100, -1)), st.booleans()),
                max_size=80))
def test_scan_shape_properties(raw: list[tuple[bytes, float | None, bool]]) -> None:
    found = [bss(s, sig, rsn=sec) for s, sig, sec in raw]
    networks = scan_networks(found)
    assert len(networks) <= 32
    ssids = [n["ssid"] for n in networks]
    assert len(set(ssids)) == len(ssids)
    assert all(ssid_text(s.encode()) == s for s in ssids)
    signals = [n["signal"] for n in networks]
    assert signals == sorted(signals, reverse=True)
    valid = {ssid_text(s) for s, _, _ in raw} - {None}
    assert len(networks) == min(32, len(valid))


def test_a_simulated_scan_end_to_end(tmp_path: Path) -> None:
    root = sim_host(tmp_path, "network-ethernet-dhcp")
    text, detail = scan_wifi(SimRunner(root), "wlp3s0")
    assert text is not None, detail
    section = scan_section("wlp3s0", parse_iw_scan(text), datetime(2026, 12, 1, tzinfo=UTC))
    assert section == {
        "interface": "wlp3s0",
        "networks": [{"ssid": "Home", "signal": -48, "security": "secured"},
                     {"ssid": "Cafe Libre", "signal": -63, "security": "open"}],
        "observedAt": "2026-12-01T00:00:00Z",
    }
    network = {"supported": True, "message": "", "interfaces": [], "id": "0" * 64,
               "scan": section}
    assert schemas.errors("network", network) == []
    assert scan_wifi(SimRunner(root), "enp1s0")[0] is None
