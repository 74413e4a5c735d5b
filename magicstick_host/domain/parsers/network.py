"""The network tools' output: `ip -j address show`, `ip -j -4 route show default`,
`iw dev <if> link` and `iw dev <if> scan` (network.md, "Sources").

`ip -j` prints one JSON array; unknown keys are ignored, a missing mandatory one is a
ParseError. `iw` prints text for people: the parsers read only the lines they need and decode
iw's `\\xNN` escapes of SSID bytes (iw escapes non-printable bytes, backslashes and leading or
trailing spaces).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from magicstick_host.domain.network.evidence import DefaultRoute, IpAddress, IpLink, WifiLink
from magicstick_host.domain.parsers.common import ParseError, shorten, split_lines
from magicstick_host.domain.strict_json import loads_strict
from magicstick_host.lite_dataclasses import dataclass

if TYPE_CHECKING:
    from typing import Any

_MAC = re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}")
MAX_LINKS = 4096


def _json_array(text: str, what: str) -> list[Any]:
    try:
        doc = loads_strict(text.encode("utf-8", errors="surrogateescape"))
    except (ValueError, UnicodeError) as exc:
        raise ParseError(f"{what}: not JSON: {shorten(str(exc))}") from None
    if not isinstance(doc, list):
        raise ParseError(f"{what}: not a JSON array")
    if len(doc) > MAX_LINKS:
        raise ParseError(f"{what}: more than {MAX_LINKS} entries")
    return doc


def _str(obj: dict[str, Any], key: str, what: str, *, default: str | None = None) -> str:
    value = obj.get(key, default)
    if not isinstance(value, str):
        raise ParseError(f"{what}: {key} is not a string")
    return value


def _int(obj: dict[str, Any], key: str, what: str, *, default: int | None = None) -> int:
    value = obj.get(key, default)
    if type(value) is not int or not 0 <= value <= 2**32:
        raise ParseError(f"{what}: {key} is not a non-negative integer")
    return value


def parse_ip_addresses(text: str) -> tuple[IpLink, ...]:
    """`ip -j address show`: every interface with its flags, state, MAC and addresses."""
    links: list[IpLink] = []
    for index, entry in enumerate(_json_array(text, "ip address")):
        what = f"ip address entry {index}"
        if not isinstance(entry, dict):
            raise ParseError(f"{what}: not an object")
        name = _str(entry, "ifname", what)
        flags = entry.get("flags", [])
        if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
            raise ParseError(f"{what}: flags is not a list of strings")
        mac = entry.get("address", "")
        mac = mac.lower() if isinstance(mac, str) and _MAC.fullmatch(mac.lower()) else ""
        infos = entry.get("addr_info", [])
        if not isinstance(infos, list):
            raise ParseError(f"{what}: addr_info is not a list")
        addresses = tuple(_address(info, f"{what} address") for info in infos)
        links.append(
            IpLink(
                name=name,
                flags=tuple(flags),
                operstate=_str(entry, "operstate", what, default="UNKNOWN"),
                mac=mac,
                addresses=tuple(a for a in addresses if a is not None),
            )
        )
    return tuple(links)


def _address(info: Any, what: str) -> IpAddress | None:
    if not isinstance(info, dict):
        raise ParseError(f"{what}: not an object")
    family = info.get("family")
    if family not in ("inet", "inet6"):
        return None  # e.g. an empty entry, or a family the worker does not use
    prefix = _int(info, "prefixlen", what)
    if prefix > (32 if family == "inet" else 128):
        raise ParseError(f"{what}: prefixlen {prefix} is too large")
    return IpAddress(
        family=str(family),
        local=_str(info, "local", what),
        prefixlen=prefix,
        scope=_str(info, "scope", what, default="global"),
    )


def parse_default_routes(text: str) -> tuple[DefaultRoute, ...]:
    """`ip -j -4 route show default`: the IPv4 default routes, with gateway and metric."""
    routes: list[DefaultRoute] = []
    for index, entry in enumerate(_json_array(text, "ip route")):
        what = f"ip route entry {index}"
        if not isinstance(entry, dict):
            raise ParseError(f"{what}: not an object")
        if entry.get("dst", "default") != "default":
            continue
        routes.append(
            DefaultRoute(
                dev=_str(entry, "dev", what),
                gateway=_str(entry, "gateway", what, default=""),
                metric=_int(entry, "metric", what, default=0),
            )
        )
    return tuple(routes)


_ESCAPE = re.compile(r"\\x([0-9a-fA-F]{2})")


def decode_iw_ssid(text: str) -> bytes:
    """The SSID bytes of iw's escaped text (`\\xNN` for a byte it does not print)."""
    out = bytearray()
    pos = 0
    for match in _ESCAPE.finditer(text):
        out += text[pos : match.start()].encode("utf-8", errors="surrogateescape")
        out.append(int(match.group(1), 16))
        pos = match.end()
    out += text[pos:].encode("utf-8", errors="surrogateescape")
    return bytes(out)


def ssid_text(raw: bytes) -> str | None:
    """The SSID as text when it is 1–32 bytes of UTF-8 without control characters."""
    if not 1 <= len(raw) <= 32:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if has_control_characters(text) else text


def has_control_characters(text: str) -> bool:
    return any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in text)


def parse_iw_link(text: str) -> WifiLink:
    """`iw dev <if> link`: `Connected to <bssid> (on <if>)` then `\\tSSID: <ssid>`, or
    `Not connected.`."""
    lines = split_lines(text)
    if not lines:
        raise ParseError("iw link: empty output")
    if lines[0].strip() == "Not connected.":
        return WifiLink(connected_ssid="")
    if not lines[0].startswith("Connected to "):
        raise ParseError(f"iw link: unexpected first line {shorten(lines[0])!r}")
    for line in lines[1:]:
        stripped = line.strip()
        if stripped.startswith("SSID: "):
            ssid = ssid_text(decode_iw_ssid(stripped[len("SSID: ") :]))
            if ssid is None:
                raise ParseError("iw link: the SSID is not 1–32 bytes of printable UTF-8")
            return WifiLink(connected_ssid=ssid)
    raise ParseError("iw link: connected, but no SSID line")


@dataclass(frozen=True)
class ScannedBss:
    """One BSS of `iw dev <if> scan`, as iw printed it (the SSID still raw bytes)."""

    bssid: str
    ssid: bytes
    signal_dbm: float | None
    privacy: bool  # the capability's Privacy bit
    rsn: bool
    wpa: bool


_BSS = re.compile(r"^BSS ([0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5})")
_SIGNAL = re.compile(r"^signal: (-?[0-9]+(?:\.[0-9]+)?) dBm$")
MAX_BSS = 1024


def parse_iw_scan(text: str) -> tuple[ScannedBss, ...]:
    """`iw dev <if> scan`: each `BSS <mac>` block's SSID, signal and security elements."""
    found: list[ScannedBss] = []
    current: dict[str, Any] | None = None

    def close() -> None:
        if current is not None:
            found.append(ScannedBss(**current))

    for line in split_lines(text):
        head = _BSS.match(line)
        if head is not None:
            close()
            if len(found) >= MAX_BSS:
                raise ParseError(f"iw scan: more than {MAX_BSS} networks")
            current = {"bssid": head.group(1).lower(), "ssid": b"", "signal_dbm": None,
                       "privacy": False, "rsn": False, "wpa": False}
            continue
        if current is None:
            if line.strip():
                raise ParseError(f"iw scan: text before the first BSS: {shorten(line)!r}")
            continue
        # element lines are indented by one tab; deeper lines belong to an element
        if not line.startswith("\t") or line.startswith("\t\t"):
            continue
        body = line[1:]
        if body.startswith("SSID: ") or body == "SSID:":
            current["ssid"] = decode_iw_ssid(body[len("SSID: ") :] if body != "SSID:" else "")
        elif body.startswith("signal:"):
            match = _SIGNAL.match(body)
            if match is None:
                raise ParseError(f"iw scan: unreadable signal {shorten(body)!r}")
            current["signal_dbm"] = float(match.group(1))
        elif body.startswith("capability:"):
            current["privacy"] = "Privacy" in body.split()
        elif body.startswith("RSN:"):
            current["rsn"] = True
        elif body.startswith("WPA:"):
            current["wpa"] = True
    close()
    return tuple(found)
