"""Why an interface is not editable from the dashboard (network.md, "The capability in the
report"): each rule names, in the administrator's words, what netplan configures there that
a trial could not carry over. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.network import netplan_entries as entries

if TYPE_CHECKING:
    from typing import Any


def why_not_editable(
    found: list[tuple[str, str, dict[str, Any]]], kind: str, entry: dict[str, Any],
    live_ipv4: tuple[str, ...]
) -> str:
    if len(found) > 1:
        return "more than one netplan entry configures it"
    if found:
        section, _, _ = found[0]
        if (section == "wifis") != (kind == "wifi"):
            return f"it is configured under {section}, which does not match its kind"
    if entries.wildcard_or_driver(entry):
        return "a wildcard or driver match rule configures it"
    if len(entries.ipv4_addresses(entry)) > 1 or len(live_ipv4) > 1:
        return "it has more than one IPv4 address"
    if entries.dhcp4(entry) and entries.ipv4_addresses(entry):
        return "it has both DHCP and a static IPv4 address"
    ipv4_routes = [r for r in entries.routes(entry) if entries.is_ipv4_route(r)]
    if any(not entries.is_default_route(r) for r in ipv4_routes):
        return "it has IPv4 routes other than the default route"
    defaults = entries.ipv4_default_routes(entry)
    if len(defaults) > 1:
        return "it has more than one IPv4 default route"
    beyond = sorted({key for r in defaults for key in set(r) - entries.SIMPLE_ROUTE_KEYS})
    if beyond:
        return ("its default route has settings beyond via and metric "
                f"({', '.join(_route_setting(defaults, key) for key in beyond)}), which this "
                "page does not manage")
    if defaults and "gateway4" in entry:
        return "it has both gateway4 and a default route"
    if entry.get("routing-policy"):
        return "it has routing policy rules"
    if "auth" in entry:
        return "it uses 802.1X authentication"
    if "networkmanager" in entry or str(entry.get("renderer", "")).lower() == "networkmanager":
        return "NetworkManager settings configure it"
    if "openvswitch" in entry:
        return "Open vSwitch settings configure it"
    return ""


def _route_setting(defaults: list[dict[str, Any]], key: str) -> str:
    """`on-link: true` for a scalar setting (the reason names what netplan configures),
    else the key alone."""
    value = next((r[key] for r in defaults if key in r), None)
    if isinstance(value, str) and len(value) <= 32:
        return f"{key}: {value}"
    return key


def wifi_why_not(entry: dict[str, Any]) -> str:
    for ap in entries.access_points(entry).values():
        if not isinstance(ap, dict) and ap is not None:
            return "an access point entry cannot be read"
        ap = ap or {}
        if entries.ap_key_management(ap) not in ("psk", "none"):
            return "an access point uses key management other than WPA-PSK"
        auth = ap.get("auth")
        if isinstance(auth, dict) and set(auth) - {"key-management", "password"}:
            return "an access point uses 802.1X/EAP settings"
        if "networkmanager" in ap:
            return "NetworkManager settings configure an access point"
        if str(ap.get("mode", "infrastructure")).lower() != "infrastructure":
            return "it runs as an access point or ad-hoc network"
    return ""
