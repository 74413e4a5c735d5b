"""What a simulated host's network does with a netplan configuration.

- `merge_netplan`: the files of /etc/netplan merged the way netplan merges them (mappings key
  by key, lists appended, later scalars win) — what `netplan get` prints;
- `netplan_errors`: the mistakes `netplan generate` refuses (YAML, addresses, routes,
  passphrases, Wi-Fi without access points), as its error lines;
- `live_links`: each interface's live state under the running configuration and the
  environment (sim/network_model.py): carrier, association, addresses and default routes.
"""

from __future__ import annotations

import ipaddress
import json
from typing import TYPE_CHECKING

from magicstick_host.domain.network import netplan_entries as entries
from magicstick_host.domain.parsers import ParseError
from magicstick_host.domain.parsers.netplan import netplan_bool, netplan_int
from magicstick_host.lite_dataclasses import dataclass, field
from magicstick_host.sim.network_model import AccessPoint, SimInterface, SimNetwork

if TYPE_CHECKING:
    from typing import Any

NETPLAN_DIR = "etc/netplan"


def _merge(into: Any, new: Any) -> Any:
    if isinstance(into, dict) and isinstance(new, dict):
        merged = dict(into)
        for key, value in new.items():
            merged[key] = _merge(merged[key], value) if key in merged else value
        return merged
    if isinstance(into, list) and isinstance(new, list):
        return into + [item for item in new if item not in into]
    return new


def netplan_documents(net: SimNetwork) -> list[tuple[str, dict[str, Any]]]:
    """(name, parsed document) of every /etc/netplan/*.yaml, in netplan's order (by name).
    ParseError names the file that does not parse."""
    docs = []
    for path in sorted(net.netplan_files, key=lambda p: p.rsplit("/", 1)[-1]):
        name = path.rsplit("/", 1)[-1]
        try:
            from magicstick_host.ports.netplan_yaml import load_netplan_yaml  # on use only

            docs.append((name, load_netplan_yaml(net.netplan_files[path])))
        except ParseError as exc:
            raise ParseError(f"/{path}: {exc}") from None
    return docs


def merge_netplan(net: SimNetwork) -> dict[str, Any]:
    """The merged `network:` mapping ({} without files). ParseError for an unreadable file."""
    merged: dict[str, Any] = {}
    for name, doc in netplan_documents(net):
        network = doc.get("network")
        if network is None:
            continue
        if not isinstance(network, dict):
            raise ParseError(f"/{NETPLAN_DIR}/{name}: network is not a mapping")
        merged = _merge(merged, network)
    return merged


def netplan_errors(network: dict[str, Any]) -> list[str]:
    """What `netplan generate` would refuse in a merged configuration."""
    problems: list[str] = []
    version = network.get("version")
    if version is not None and netplan_int(version) != 2:
        problems.append("Only version 2 is supported")
    for section in ("ethernets", "wifis"):
        items = network.get(section, {})
        if items is None:
            continue
        if not isinstance(items, dict):
            problems.append(f"{section}: expected a mapping")
            continue
        for name, entry in items.items():
            problems += [f"{name}: {p}" for p in _entry_errors(section, entry or {})]
    return problems


def _entry_errors(section: str, entry: Any) -> list[str]:
    if not isinstance(entry, dict):
        return ["expected a mapping"]
    problems: list[str] = []
    for key in ("dhcp4", "dhcp6"):
        if key in entry and netplan_bool(entry[key]) is None:
            problems.append(f"invalid boolean value '{entry[key]}'")
    for item in entries.addresses(entry):
        text = entries.address_text(item) or ""
        try:
            if "/" not in text:
                raise ValueError
            ipaddress.ip_interface(text)
        except ValueError:
            problems.append(f"malformed address '{text}', must be X.X.X.X/NN or X:X:X:X:X:X:X:X/NN")
    for route in entries.routes(entry):
        if not isinstance(route, dict) or "to" not in route:
            problems.append("route is missing the 'to' field")
            continue
        via = route.get("via")
        if via is not None:
            try:
                ipaddress.ip_address(str(via))
            except ValueError:
                problems.append(f"invalid IP family '{via}'")
    for server in entries.nameservers(entry):
        try:
            ipaddress.ip_address(server)
        except ValueError:
            problems.append(f"malformed address '{server}'")
    if section == "wifis":
        points = entries.access_points(entry)
        if not points:
            problems.append("No access points defined")
        for ssid, ap in points.items():
            password = entries.ap_password(ap)
            if password is not None and not (8 <= len(password) <= 63 or len(password) == 64):
                problems.append(f"{ssid}: ASCII passphrase must be between 8 and 63 characters "
                                "(inclusive)")
    return problems


# -- the live state --------------------------------------------------------------------------


@dataclass
class LiveLink:
    name: str
    mac: str
    kind: str
    up: bool = False  # administratively (netplan configures it)
    carrier: bool = False
    associated: AccessPoint | None = None
    addresses: list[tuple[str, int, str]] = field(default_factory=list)  # (ip, prefix, scope)
    routes: list[tuple[str, int, str]] = field(default_factory=list)  # (gateway, metric, proto)

    @property
    def operstate(self) -> str:
        if not self.up:
            return "DOWN"
        if self.carrier:
            return "UP"
        return "DORMANT" if self.kind == "wifi" else "DOWN"


def applied_config(net: SimNetwork) -> dict[str, Any] | None:
    return json.loads(net.applied_json) if net.applied_json else None


def _entry(config: dict[str, Any], iface: SimInterface) -> dict[str, Any] | None:
    section = config.get("wifis" if iface.kind == "wifi" else "ethernets")
    if not isinstance(section, dict):
        return None
    for netplan_id, entry in section.items():
        entry = entry if isinstance(entry, dict) else {}
        if entries.matches(str(netplan_id), entry, iface.name, iface.mac):
            return entry
    return None


def _associate(net: SimNetwork, entry: dict[str, Any]) -> AccessPoint | None:
    for ssid, ap_config in entries.access_points(entry).items():
        password = entries.ap_password(ap_config)
        for ap in net.access_points:
            if ap.ssid != ssid or (ap.hidden and not entries.ap_hidden(ap_config)):
                continue
            if ap.security == "open" and password is None:
                return ap
            if ap.security == "wpa-psk" and password is not None and (
                password == ap.passphrase or password.lower() == _psk(ap).lower()
            ):
                return ap
    return None


def _psk(ap: AccessPoint) -> str:
    import hashlib  # OpenSSL's, for a simulated Wi-Fi join only (not for every simulated tick)

    return hashlib.pbkdf2_hmac("sha1", ap.passphrase.encode(), ap.ssid.encode(), 4096, 32).hex()


def _link_local(mac: str) -> str:
    parts = [int(p, 16) for p in mac.split(":")]
    parts[0] ^= 0x02
    eui = [*parts[:3], 255, 254, *parts[3:]]
    groups = [f"{eui[i] << 8 | eui[i + 1]:x}" for i in range(0, 8, 2)]
    return "fe80::" + ":".join(groups)


def live_links(net: SimNetwork) -> list[LiveLink]:
    config = applied_config(net)
    links: list[LiveLink] = []
    for iface in net.interfaces:
        link = LiveLink(iface.name, iface.mac, iface.kind)
        links.append(link)
        entry = _entry(config, iface) if config is not None else None
        if entry is None:
            continue
        link.up = True
        segment_name = iface.segment
        if iface.kind == "wifi":
            link.associated = _associate(net, entry)
            segment_name = link.associated.segment if link.associated else ""
        segment = net.segments.get(segment_name)
        link.carrier = segment is not None
        if segment is None:
            continue
        link.addresses.append((_link_local(iface.mac), 64, "link"))
        _ipv4(link, entry, segment, iface)
    return links


def _ipv4(link: LiveLink, entry: dict[str, Any], segment: Any, iface: SimInterface) -> None:
    subnet = ipaddress.ip_network(segment.subnet)
    metric = entries.configured_metric(entry, iface.kind)
    if entries.dhcp4(entry):
        lease = segment.leases.get(iface.mac.lower())
        if lease is not None:
            link.addresses.append((lease, subnet.prefixlen, "global"))
            link.routes.append((segment.gateway, metric, "dhcp"))
    nets = []
    for text in (entries.address_text(a) or "" for a in entries.addresses(entry)):
        try:
            address = ipaddress.ip_interface(text)
        except ValueError:
            continue
        scope = "global"
        link.addresses.append((str(address.ip), address.network.prefixlen, scope))
        nets.append(address.network)
    for route in entries.ipv4_default_routes(entry):
        via = route.get("via")
        try:
            gateway = ipaddress.ip_address(str(via))
        except ValueError:
            continue
        # the kernel refuses a gateway that is not on a subnet of the link
        if any(gateway in n for n in nets):
            link.routes.append((str(gateway), netplan_int(route.get("metric")) or 0, "static"))
