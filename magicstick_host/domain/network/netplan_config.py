"""The managed netplan file of a trial: the effective configuration with one interface changed.
Pure.

netplan merges every file of /etc/netplan (mappings key by key, lists appended), so the only
file whose meaning the worker can be sure of is one that says everything: the managed file
`/etc/netplan/90-magicstick-network.yaml` holds the whole merged configuration (`netplan get`),
and the files it was merged from are removed while the trial runs (their backups bring them
back on a rollback). Of the edited interface only its IPv4 addressing, IPv4 default route, DNS
servers, route metric (in DHCP mode also the DHCPv6 one: networkd takes one metric for both,
and netplan refuses two) and the chosen access point change; everything else is kept as
netplan showed it: other interfaces, other access points and their credentials, the
renderer, IPv6 settings, match rules and `set-name`. An empty password with WPA keeps the
saved key of that SSID.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from magicstick_host.domain.network import netplan_entries as entries
from magicstick_host.domain.network.capability import InterfaceView
from magicstick_host.domain.network.settings import NetworkSettings
from magicstick_host.domain.parsers.netplan import netplan_bool

if TYPE_CHECKING:
    from typing import Any


def entry_location(view: InterfaceView) -> tuple[str, str]:
    """(section, netplan id) of the entry that configures the interface (a new one named
    after the interface when netplan does not configure it yet)."""
    if view.netplan_entry is not None:
        return view.netplan_entry
    return ("wifis" if view.kind == "wifi" else "ethernets", view.name)


def managed_network(
    effective: dict[str, Any], view: InterfaceView, settings: NetworkSettings
) -> dict[str, Any]:
    """The `network:` mapping of the managed file."""
    if settings.interface != view.name or settings.kind != view.kind:
        raise ValueError("the settings are for another interface")
    network: dict[str, Any] = without_nulls(effective)
    network.setdefault("version", 2)
    section, netplan_id = entry_location(view)
    items = network.get(section)
    items = dict(items) if isinstance(items, dict) else {}
    old = items.get(netplan_id)
    entry = copy.deepcopy(old) if isinstance(old, dict) else {}
    _set_ipv4(entry, settings)
    _set_dns(entry, settings)
    if settings.kind == "wifi":
        _set_access_point(entry, settings)
    items[netplan_id] = entry
    network[section] = items
    return network


def _set_ipv4(entry: dict[str, Any], s: NetworkSettings) -> None:
    kept = [a for a in entries.addresses(entry)
            if not entries.is_ipv4_text(entries.address_text(a) or "")]
    kept_routes = [r for r in entries.routes(entry)
                   if not (entries.is_default_route(r) and entries.is_ipv4_route(r))]
    entry.pop("gateway4", None)
    if s.mode == "dhcp":
        entry["dhcp4"] = True
        overrides = entry.get("dhcp4-overrides")
        overrides = dict(overrides) if isinstance(overrides, dict) else {}
        overrides["route-metric"] = s.metric
        entry["dhcp4-overrides"] = overrides
        if netplan_bool(entry.get("dhcp6")):
            # networkd takes one route metric for both DHCP clients, and netplan refuses
            # different ones: the chosen metric is the interface's
            v6 = entry.get("dhcp6-overrides")
            v6 = dict(v6) if isinstance(v6, dict) else {}
            v6["route-metric"] = s.metric
            entry["dhcp6-overrides"] = v6
    else:
        entry["dhcp4"] = False
        entry.pop("dhcp4-overrides", None)
        kept = [s.address, *kept]
        if s.gateway:
            kept_routes = [{"to": "default", "via": s.gateway, "metric": s.metric},
                           *kept_routes]
    _set_or_drop(entry, "addresses", kept)
    _set_or_drop(entry, "routes", kept_routes)


def _set_dns(entry: dict[str, Any], s: NetworkSettings) -> None:
    servers = entry.get("nameservers")
    servers = dict(servers) if isinstance(servers, dict) else {}
    _set_or_drop(servers, "addresses", list(s.dns))
    _set_or_drop(entry, "nameservers", servers)


def _set_access_point(entry: dict[str, Any], s: NetworkSettings) -> None:
    points = entries.access_points(entry)
    points = {ssid: copy.deepcopy(ap) for ssid, ap in points.items()}
    old = points.get(s.ssid)
    ap: dict[str, Any] = dict(old) if isinstance(old, dict) else {}
    if s.security == "open":
        ap.pop("password", None)
        ap.pop("auth", None)
    elif s.password:
        ap.pop("password", None)
        ap["auth"] = {"key-management": "psk", "password": s.password}
    # wpa-psk without a password: the saved key stays exactly as it is
    if s.hidden:
        ap["hidden"] = True
    else:
        ap.pop("hidden", None)
    # the chosen network first: the Wi-Fi daemon tries the networks in the order netplan
    # writes them, and the first one is what the interface reports as configured
    entry["access-points"] = {s.ssid: ap, **{k: v for k, v in points.items() if k != s.ssid}}


def _set_or_drop(holder: dict[str, Any], key: str, value: Any) -> None:
    if value:
        holder[key] = value
    else:
        holder.pop(key, None)


def without_nulls(value: Any) -> Any:
    """A copy without the keys whose value is null. `netplan get` prints a value netplan keeps
    as "unset" (a route metric of 4294967295) as null, and `netplan generate` reads a null
    back as another value (a DHCPv4 metric then differs from an absent DHCPv6 one, which it
    refuses); an absent key is unset to both."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return copy.deepcopy(value)


def managed_document(network: dict[str, Any]) -> dict[str, Any]:
    """The managed file's document (ports/netplan_yaml.py writes it, with its header)."""
    return {"network": network}
