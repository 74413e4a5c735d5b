"""The `network` capability (network.md, "The capability in the report"). Pure.

`network_inventory` turns the evidence and the Node's InternalIP addresses into a
`NetworkInventory`: every physical interface with what it shows and what netplan configures,
whether editing is safe, and the netplan snapshot the capability id covers. `network_section`
renders what the report publishes, with the keyed id (`network_id`). A password or key never
leaves the inventory: the published interfaces say only `hasPassword`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from magicstick_host.domain.canonical import canonical_json, sha256_hex
from magicstick_host.domain.network import netplan_entries as entries
from magicstick_host.domain.network.editable import why_not_editable, wifi_why_not
from magicstick_host.domain.network.evidence import (
    MAX_NETPLAN_FILES,
    NETPLAN_DIR,
    IpLink,
    NetworkEvidence,
    SysNetInterface,
)
from magicstick_host.domain.parsers import ParseError
from magicstick_host.domain.parsers.netplan import netplan_network
from magicstick_host.domain.text import clip_message
from magicstick_host.lite_dataclasses import dataclass, field

if TYPE_CHECKING:
    from typing import Any

INTERFACE_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,14}$")
MAX_INTERFACES = 32
NETWORK_KEYS = frozenset({"version", "renderer", "ethernets", "wifis"})
ID_KIND = "network/1"
KEY_BYTES = 32
SUPPORTED_MESSAGE = (
    "Ethernet and Wi-Fi settings can be changed. A change runs as a trial: it is kept only when "
    "it is confirmed in time and the host still reaches its cluster addresses; otherwise the "
    "previous configuration comes back by itself."
)


@dataclass(frozen=True)
class WifiView:
    configured_ssid: str
    has_password: bool
    security: str  # wpa-psk | wpa-eap | open
    hidden: bool
    connected_ssid: str
    # SSIDs of this interface that have a saved key (an empty password may keep it)
    saved_key_ssids: frozenset[str] = frozenset()


@dataclass(frozen=True)
class InterfaceView:
    name: str
    kind: str  # wifi | ethernet
    mac: str
    state: str
    addresses: tuple[str, ...]  # live, CIDR: IPv4 first, then global IPv6
    ipv4: tuple[str, ...]  # live IPv4, CIDR
    editable: bool
    why_not_editable: str
    scan_supported: bool
    cluster_addresses: tuple[str, ...]
    gateway: str
    configured_mode: str  # dhcp | static | none (netplan configures no IPv4 on it)
    configured_address: str
    configured_gateway: str
    dns: tuple[str, ...]
    metric: int
    # where netplan configures it: ("ethernets"|"wifis", id), or None when no entry does
    netplan_entry: tuple[str, str] | None
    wifi: WifiView | None = None

    def published(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "mac": self.mac,
            "state": self.state,
            "addresses": list(self.addresses),
            "editable": self.editable,
            "scanSupported": self.scan_supported,
            "clusterAddresses": list(self.cluster_addresses),
            "gateway": self.gateway,
            "configuredMode": self.configured_mode,
            "configuredAddress": self.configured_address,
            "configuredGateway": self.configured_gateway,
            "dns": list(self.dns),
            "metric": self.metric,
        }
        if self.wifi is not None:
            doc.update(
                configuredSsid=self.wifi.configured_ssid,
                hasPassword=self.wifi.has_password,
                security=self.wifi.security,
                hidden=self.wifi.hidden,
                connectedSsid=self.wifi.connected_ssid,
            )
        if not self.editable and self.why_not_editable:
            doc["notEditableReason"] = self.why_not_editable
        return doc


@dataclass(frozen=True)
class NetworkInventory:
    supported: bool
    message: str
    interfaces: tuple[InterfaceView, ...] = ()
    # the merged configuration (`netplan get`'s `network:` mapping); {} when unknown
    effective: dict[str, Any] = field(default_factory=dict)
    # (host path, sha256) of every netplan YAML file, sorted: what the id and the trial's
    # "nothing changed since approval" check cover
    snapshot: tuple[tuple[str, str], ...] = ()
    cluster_addresses: tuple[str, ...] = ()

    @property
    def snapshot_digest(self) -> str:
        return sha256_hex([list(item) for item in self.snapshot])

    def interface(self, name: str) -> InterfaceView | None:
        return next((i for i in self.interfaces if i.name == name), None)


def node_internal_ips(node: dict[str, Any] | None) -> tuple[str, ...]:
    """The Node's `status.addresses` of type InternalIP, as written there."""
    status = (node or {}).get("status")
    found = status.get("addresses") if isinstance(status, dict) else None
    if not isinstance(found, list):
        return ()
    return tuple(
        str(a["address"])
        for a in found
        if isinstance(a, dict) and a.get("type") == "InternalIP" and isinstance(a.get("address"),
                                                                                 str)
    )


# -- the inventory ---------------------------------------------------------------------------


def network_inventory(ev: NetworkEvidence, cluster_addresses: Sequence[str]) -> NetworkInventory:
    cluster = tuple(_normal_ip(a) for a in cluster_addresses if _normal_ip(a))
    snapshot = tuple(sorted((f.path, f.sha256) for f in ev.netplan_files or ()))
    snapshot += tuple((path, "foreign") for path in sorted(ev.foreign_netplan_files))
    problem = _unsupported(ev)
    effective: dict[str, Any] = {}
    if ev.netplan_get is not None:
        try:
            effective = netplan_network(ev.netplan_get)
        except ParseError as exc:
            problem = problem or f"`netplan get` printed an unusable configuration: {exc}"
    problem = problem or _unrenderable(effective)
    interfaces = _interfaces(ev, effective, cluster) if ev.sys_interfaces is not None else ()
    if problem is None and not interfaces:
        problem = "this host shows no physical network interface"
    if problem is not None:
        interfaces = tuple(_read_only(i) for i in interfaces)
        return NetworkInventory(False, f"Network settings cannot be changed here: {problem}",
                                interfaces, effective, snapshot, cluster)
    return NetworkInventory(True, SUPPORTED_MESSAGE, interfaces, effective, snapshot, cluster)


def _read_only(view: InterfaceView) -> InterfaceView:
    from dataclasses import replace

    return replace(view, editable=False, why_not_editable=view.why_not_editable or
                   "network settings are not supported on this host")


def _unsupported(ev: NetworkEvidence) -> str | None:
    if ev.problems:
        return ev.problems[0]
    if ev.netplan_files is None:
        return f"{NETPLAN_DIR} cannot be read"
    if len(ev.netplan_files) > MAX_NETPLAN_FILES:
        return f"{NETPLAN_DIR} has more than {MAX_NETPLAN_FILES} netplan files"
    for file in ev.netplan_files:
        if file.symlink:
            return f"{file.path} is a symlink"
        if file.text is None:
            reason = "larger than 256 KiB" if file.problem == "too large" else file.problem
            return f"{file.path} cannot be used ({reason})"
    if ev.foreign_netplan_files:
        return (f"netplan configuration outside {NETPLAN_DIR} ({ev.foreign_netplan_files[0]}) "
                "would be merged in; it is not managed here")
    for file in ev.netplan_files:
        if file.document is None:
            return f"{file.path}: {file.problem or 'not read as netplan YAML'}"
        try:
            network = netplan_network(file.document)
        except ParseError as exc:
            return f"{file.path}: {exc}"
        extra = sorted(set(network) - NETWORK_KEYS)
        if extra:
            return (f"{file.path} configures {', '.join(extra)}; only plain Ethernet and Wi-Fi "
                    "interfaces (no bridges, bonds or VLANs) can be changed here")
    if ev.netplan_get is None:
        return "`netplan get` gave no configuration"
    return None


def _unrenderable(effective: dict[str, Any]) -> str | None:
    """A configuration `netplan get` prints but `netplan generate` refuses: every trial writes
    the whole configuration, so no change could be rendered (tests/owners/test_netplan_get.py
    found this one with the real netplan)."""
    for section in ("ethernets", "wifis"):
        items = effective.get(section)
        for netplan_id, entry in items.items() if isinstance(items, dict) else ():
            key = entries.dhcp_overrides_conflict(entry) if isinstance(entry, dict) else ""
            if key:
                return (f"netplan cannot render the current configuration: {netplan_id} has "
                        f"DHCPv4 and DHCPv6 with different {key} overrides, and networkd "
                        "takes one for both")
    return None


def _normal_ip(text: str) -> str:
    import ipaddress  # here, not at the top: inspect reads no address (~1.5 ms)

    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return ""


def _interfaces(
    ev: NetworkEvidence, effective: dict[str, Any], cluster: tuple[str, ...]
) -> tuple[InterfaceView, ...]:
    physical = sorted(
        (i for i in ev.sys_interfaces or () if i.physical and INTERFACE_NAME.match(i.name)),
        key=lambda i: i.name,
    )[:MAX_INTERFACES]
    return tuple(_interface(ev, effective, cluster, sys) for sys in physical)


def _entries_for(
    effective: dict[str, Any], name: str, mac: str
) -> list[tuple[str, str, dict[str, Any]]]:
    found: list[tuple[str, str, dict[str, Any]]] = []
    for section in ("ethernets", "wifis"):
        items = effective.get(section)
        if not isinstance(items, dict):
            continue
        for netplan_id, entry in items.items():
            if isinstance(entry, dict) and entries.matches(netplan_id, entry, name, mac):
                found.append((section, netplan_id, entry))
            elif entry is None and netplan_id == name:
                found.append((section, netplan_id, {}))
    return found


def _interface(
    ev: NetworkEvidence, effective: dict[str, Any], cluster: tuple[str, ...], sys: SysNetInterface
) -> InterfaceView:
    kind = "wifi" if sys.wireless else "ethernet"
    link = ev.link(sys.name) or IpLink(sys.name)
    mac = sys.mac or link.mac
    ipv4 = tuple(a.cidr for a in link.ipv4())
    ipv6 = tuple(a.cidr for a in link.addresses if a.family == "inet6" and a.scope == "global")
    live_ips = {_normal_ip(a.local) for a in link.addresses}
    on_this = tuple(a for a in cluster if a in live_ips)
    route = min((r for r in ev.default_routes or () if r.dev == sys.name),
                key=lambda r: r.metric, default=None)
    found = _entries_for(effective, sys.name, mac)
    entry = found[0][2] if len(found) == 1 else {}
    why = why_not_editable(found, kind, entry, ipv4)
    wifi = _wifi_view(ev, sys.name, entry) if kind == "wifi" else None
    if wifi is not None and not why:
        why = wifi_why_not(entry)
    if wifi is not None and not why and sys.name not in ev.wifi_links:
        why = "its Wi-Fi connection cannot be read (`iw` is missing or did not answer)"
    configured = entries.ipv4_addresses(entry)
    return InterfaceView(
        name=sys.name,
        kind=kind,
        mac=mac,
        state=sys.operstate or link.operstate.lower(),
        addresses=ipv4 + ipv6,
        ipv4=ipv4,
        editable=not why,
        why_not_editable=why,
        scan_supported=kind == "wifi" and link.up and ev.iw_present,
        cluster_addresses=on_this,
        gateway=route.gateway if route is not None else "",
        configured_mode=entries.configured_mode(entry),
        configured_address=configured[0] if configured else "",
        configured_gateway=entries.configured_gateway(entry),
        dns=tuple(entries.nameservers(entry)),
        metric=entries.configured_metric(entry, kind),
        netplan_entry=(found[0][0], found[0][1]) if len(found) == 1 else None,
        wifi=wifi,
    )


def _wifi_view(ev: NetworkEvidence, name: str, entry: dict[str, Any]) -> WifiView:
    aps = entries.access_points(entry)
    link = ev.wifi_links.get(name)
    connected = link.connected_ssid if link is not None else ""
    ssid = connected if connected in aps else next(iter(aps), "")
    ap = aps.get(ssid) or {}
    has_password = entries.ap_password(ap) is not None
    return WifiView(
        configured_ssid=ssid,
        has_password=has_password,
        security=entries.ap_security(ap),
        hidden=entries.ap_hidden(ap),
        connected_ssid=connected,
        saved_key_ssids=frozenset(s for s, a in aps.items() if entries.ap_password(a) is not None),
    )


# -- what the report publishes ----------------------------------------------------------------


def network_id(inventory: NetworkInventory, key: bytes) -> str:
    """HMAC-SHA256 under the host's persistent key over the netplan snapshot and each
    interface's name, MAC, kind and cluster addresses: keyed, so the published id is no
    offline oracle for a Wi-Fi password in the files it covers."""
    import hmac  # for the report's network section, not with the module

    if len(key) != KEY_BYTES:
        raise ValueError(f"the network id key must be {KEY_BYTES} bytes")
    subject = {
        "kind": ID_KIND,
        "snapshot": inventory.snapshot_digest,
        "interfaces": [
            {"name": i.name, "mac": i.mac, "kind": i.kind,
             "clusterAddresses": list(i.cluster_addresses)}
            for i in inventory.interfaces
        ],
    }
    return hmac.new(key, canonical_json(subject).encode("utf-8"), "sha256").hexdigest()


def network_section(
    inventory: NetworkInventory, key: bytes | None, *, key_problem: str = ""
) -> dict[str, Any]:
    """The report's `network` section. Without a usable key, `supported: false` (an id that
    anyone could recompute would leak what the snapshot covers)."""
    interfaces = [i.published() for i in inventory.interfaces]
    if key is None:
        why = key_problem or "the network id key is not available"
        return {
            "supported": False,
            "message": clip_message(f"Network settings cannot be changed here: {why}"),
            "interfaces": [{**i, "editable": False} for i in interfaces],
            "id": sha256_hex({"kind": f"{ID_KIND}-unkeyed", "snapshot": "unavailable"}),
        }
    return {
        "supported": inventory.supported,
        "message": clip_message(inventory.message),
        "interfaces": interfaces,
        "id": network_id(inventory, key),
    }
