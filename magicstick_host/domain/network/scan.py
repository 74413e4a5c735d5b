"""The result of a Wi-Fi scan as the report publishes it (`network.scan`, network.md). Pure.

One entry per SSID (its strongest BSS), sorted by signal (strongest first, then by SSID), at
most 32; SSIDs of 1–32 bytes of UTF-8 without control characters (a hidden network's empty
SSID and undecodable ones are left out); `security` is `secured` when the BSS advertises RSN or
WPA (or only the privacy bit: WEP cannot be joined as an open network), else `open`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from magicstick_host.domain.parsers.network import ScannedBss, ssid_text

if TYPE_CHECKING:
    from typing import Any

MAX_NETWORKS = 32
# what iw prints for a BSS it heard without a signal reading
NO_SIGNAL_DBM = -100


def scan_networks(found: Sequence[ScannedBss]) -> list[dict[str, Any]]:
    best: dict[str, tuple[float, bool]] = {}
    for bss in found:
        ssid = ssid_text(bss.ssid)
        if ssid is None:
            continue
        signal = bss.signal_dbm if bss.signal_dbm is not None else float(NO_SIGNAL_DBM)
        secured = bss.rsn or bss.wpa or bss.privacy
        if ssid not in best or signal > best[ssid][0]:
            best[ssid] = (signal, secured)
    ranked = sorted(best.items(), key=lambda item: (-item[1][0], item[0]))[:MAX_NETWORKS]
    return [
        {"ssid": ssid, "signal": round(signal), "security": "secured" if secured else "open"}
        for ssid, (signal, secured) in ranked
    ]


def scan_section(interface: str, found: Sequence[ScannedBss], observed_at: datetime) -> dict[
    str, Any
]:
    """`network.scan`: `{interface, networks, observedAt}`."""
    return {
        "interface": interface,
        "networks": scan_networks(found),
        "observedAt": observed_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
