"""Reading one netplan interface entry (an item of `ethernets:` or `wifis:`). Pure.

Every scalar arrives as a string (parsers/netplan.py) and is typed here the way netplan types
it. The helpers never raise on odd shapes: what they cannot read is "absent", and the
capability's editable rules (domain/network/capability.py) refuse entries whose shape they do
not fully understand.
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING

from magicstick_host.domain.parsers.netplan import netplan_bool, netplan_int

if TYPE_CHECKING:
    from typing import Any

DEFAULT_DESTINATIONS = frozenset({"default", "0.0.0.0/0"})
DEFAULT_METRIC_WIFI = 600
DEFAULT_METRIC_ETHERNET = 100
WILDCARD_CHARS = frozenset("*?[")
# the keys of an IPv4 default route the worker writes and can therefore read back
SIMPLE_ROUTE_KEYS = frozenset({"to", "via", "metric"})


def default_metric(kind: str) -> int:
    return DEFAULT_METRIC_WIFI if kind == "wifi" else DEFAULT_METRIC_ETHERNET


def address_text(item: Any) -> str | None:
    """An `addresses:` item: `"10.0.0.2/24"` or `{"10.0.0.2/24": {lifetime: ..., label: ...}}`."""
    if isinstance(item, str):
        return item
    if isinstance(item, dict) and len(item) == 1:
        (key,) = item
        return str(key)
    return None


def is_ipv4_text(text: str) -> bool:
    import ipaddress  # here, not at the top: inspect reads no address (~1.5 ms)

    try:
        return ipaddress.ip_interface(text).version == 4
    except ValueError:
        return False


def addresses(entry: dict[str, Any]) -> list[Any]:
    value = entry.get("addresses")
    return value if isinstance(value, list) else []


def ipv4_addresses(entry: dict[str, Any]) -> list[str]:
    found = (address_text(item) for item in addresses(entry))
    return [a for a in found if a is not None and is_ipv4_text(a)]


def routes(entry: dict[str, Any]) -> list[Any]:
    value = entry.get("routes")
    return value if isinstance(value, list) else []


def is_ipv4_route(route: Any) -> bool:
    """A route whose destination or gateway is IPv4 (a `default` route is IPv4 when its
    `via` is; netplan also writes `to: 0.0.0.0/0`)."""
    import ipaddress

    if not isinstance(route, dict):
        return False
    to, via = route.get("to"), route.get("via")
    if isinstance(to, str) and to != "default":
        try:
            return ipaddress.ip_network(to, strict=False).version == 4
        except ValueError:
            return False
    return isinstance(via, str) and is_ipv4_text(via)


def is_default_route(route: Any) -> bool:
    return isinstance(route, dict) and route.get("to") in DEFAULT_DESTINATIONS


def ipv4_default_routes(entry: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in routes(entry) if is_default_route(r) and is_ipv4_route(r)]


def configured_gateway(entry: dict[str, Any]) -> str:
    for route in ipv4_default_routes(entry):
        via = route.get("via")
        if isinstance(via, str):
            return via
    legacy = entry.get("gateway4")
    return legacy if isinstance(legacy, str) else ""


def dhcp4(entry: dict[str, Any]) -> bool:
    return netplan_bool(entry.get("dhcp4")) is True


def configured_mode(entry: dict[str, Any]) -> str:
    """`dhcp` (dhcp4 on), `static` (an IPv4 address), or `none`: netplan configures no IPv4
    on the interface (IPv6-only, an SR-IOV or offload port, or no entry at all)."""
    if dhcp4(entry):
        return "dhcp"
    return "static" if ipv4_addresses(entry) else "none"


# netplan keeps a metric in 32 bits with UINT_MAX for "unset" (`netplan get` prints null)
METRIC_UNSET = 4294967295


def _metric(value: Any) -> int | None:
    metric = netplan_int(value)
    return metric if metric is not None and metric < METRIC_UNSET else None


# the DHCP overrides networkd takes once for both clients: netplan generate refuses an entry
# with DHCPv4 and DHCPv6 on whose two override sets differ in one of them (netplan's networkd
# backend: "networkd requires that <key> has the same value in both dhcp4_overrides and
# dhcp6_overrides"); unset booleans are true, an unset metric or hostname is unset
SHARED_DHCP_BOOLS = ("use-dns", "use-ntp", "send-hostname", "use-hostname", "use-mtu",
                     "use-routes")


def dhcp_overrides_conflict(entry: dict[str, Any]) -> str:
    """The override key whose DHCPv4 and DHCPv6 values differ while both clients are on
    (what `netplan generate` refuses for networkd), or ""."""
    if not (dhcp4(entry) and netplan_bool(entry.get("dhcp6")) is True):
        return ""
    v4, v6 = entry.get("dhcp4-overrides"), entry.get("dhcp6-overrides")
    v4 = v4 if isinstance(v4, dict) else {}
    v6 = v6 if isinstance(v6, dict) else {}
    for key in SHARED_DHCP_BOOLS:
        if _bool_or_true(v4.get(key)) != _bool_or_true(v6.get(key)):
            return key
    if _metric(v4.get("route-metric")) != _metric(v6.get("route-metric")):
        return "route-metric"
    for key in ("hostname", "use-domains"):
        if _text_or_none(v4.get(key)) != _text_or_none(v6.get(key)):
            return key
    return ""


def _bool_or_true(value: Any) -> bool | None:
    return True if value is None else netplan_bool(value)


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value).lower()


def configured_metric(entry: dict[str, Any], kind: str) -> int:
    if dhcp4(entry):
        overrides = entry.get("dhcp4-overrides")
        if isinstance(overrides, dict):
            metric = _metric(overrides.get("route-metric"))
            if metric is not None:
                return metric
        return default_metric(kind)
    for route in ipv4_default_routes(entry):
        metric = _metric(route.get("metric"))
        if metric is not None:
            return metric
    return default_metric(kind)


def nameservers(entry: dict[str, Any]) -> list[str]:
    servers = entry.get("nameservers")
    found = servers.get("addresses") if isinstance(servers, dict) else None
    return [str(a) for a in found if isinstance(a, str)] if isinstance(found, list) else []


def access_points(entry: dict[str, Any]) -> dict[str, Any]:
    value = entry.get("access-points")
    return value if isinstance(value, dict) else {}


def ap_password(ap: Any) -> str | None:
    """The saved passphrase or key of an access point (`password:` or `auth.password`)."""
    if not isinstance(ap, dict):
        return None
    auth = ap.get("auth")
    for holder in (ap, auth if isinstance(auth, dict) else {}):
        value = holder.get("password")
        if isinstance(value, str) and value:
            return value
    return None


def ap_key_management(ap: Any) -> str:
    """`psk` when a password is saved, else `auth.key-management` (`none` for open)."""
    if not isinstance(ap, dict):
        return "none"
    auth = ap.get("auth")
    declared = auth.get("key-management") if isinstance(auth, dict) else None
    if isinstance(declared, str):
        return declared.lower()
    return "psk" if ap_password(ap) is not None else "none"


# netplan's key-management values (netplan.io doc "Authentication"): `none` is an open
# network; `psk` and `sae` (WPA3-Personal) use a passphrase; `eap`, `eap-sha256`,
# `eap-suite-b-192` and `802.1x` authenticate with 802.1X
PSK_KEY_MANAGEMENT = frozenset({"psk", "sae"})


def ap_security(ap: Any) -> str:
    """What the report says of an access point: `open` only when no key management is set
    (or `none`) and no password is saved, `wpa-psk` for a passphrase, `wpa-eap` for
    everything else (802.1X, and a key management the worker does not know: never `open`)."""
    management = ap_key_management(ap)
    if management == "none":
        return "wpa-psk" if ap_password(ap) is not None else "open"
    if management in PSK_KEY_MANAGEMENT:
        return "wpa-psk"
    return "wpa-eap"


def ap_hidden(ap: Any) -> bool:
    return isinstance(ap, dict) and netplan_bool(ap.get("hidden")) is True


def match_rule(entry: dict[str, Any]) -> dict[str, Any] | None:
    match = entry.get("match")
    return match if isinstance(match, dict) else None


def matches(netplan_id: str, entry: dict[str, Any], name: str, mac: str) -> bool:
    """Whether the entry configures the kernel interface `name` (MAC `mac`). A wildcard or
    driver rule counts as matching (it may): such entries make the interface non-editable."""
    match = match_rule(entry)
    if match is None:
        return netplan_id == name
    if "driver" in match:
        return True
    want_name = match.get("name")
    want_mac = match.get("macaddress")
    if want_name is None and want_mac is None:
        return True  # an empty match matches everything
    if isinstance(want_name, str):
        if WILDCARD_CHARS & set(want_name):
            if not fnmatch.fnmatchcase(name, want_name):
                return False
        elif want_name != name:
            return False
    return not (isinstance(want_mac, str) and want_mac.lower() != mac.lower())


def wildcard_or_driver(entry: dict[str, Any]) -> bool:
    match = match_rule(entry)
    if match is None:
        return False
    name = match.get("name")
    return (
        "driver" in match
        or (isinstance(name, str) and bool(WILDCARD_CHARS & set(name)))
        or (name is None and match.get("macaddress") is None)
    )
