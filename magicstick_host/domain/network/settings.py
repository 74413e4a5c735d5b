"""The settings rules of network.md ("Settings rules"): the worker re-checks what the dashboard
checked, before any host change. Pure.

`check_configure_settings` and `check_scan_settings` return the approved `NetworkSettings` or a
`SettingsProblem` whose message names the one rule that was broken. The approved settings carry
the password (they go into the 0600 settings file and the managed netplan file only); their
`redacted()` form is what the state and the journal may keep.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.network.capability import InterfaceView, NetworkInventory
from magicstick_host.domain.parsers.network import has_control_characters
from magicstick_host.lite_dataclasses import dataclass, replace

if TYPE_CHECKING:
    from typing import Any

SETTINGS_FIELDS = frozenset(
    {"interface", "mode", "address", "gateway", "dns", "metric", "ssid", "security",
     "password", "hidden"}
)
WIFI_FIELDS = ("ssid", "security", "password", "hidden")
MAX_DNS = 4
HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


@dataclass(frozen=True)
class NetworkSettings:
    interface: str
    kind: str  # wifi | ethernet
    mode: str  # dhcp | static
    address: str = ""  # static: IPv4/prefix
    gateway: str = ""
    dns: tuple[str, ...] = ()
    metric: int = 100
    ssid: str = ""
    security: str = ""  # wpa-psk | open ("" on Ethernet)
    # "" with wpa-psk: keep the saved key of the same SSID
    password: str = ""
    hidden: bool = False

    @property
    def keeps_saved_key(self) -> bool:
        return self.kind == "wifi" and self.security == "wpa-psk" and not self.password

    def redacted(self) -> dict[str, Any]:
        """Everything but the password: what the state, the journal and logs may hold."""
        doc: dict[str, Any] = {
            "interface": self.interface, "kind": self.kind, "mode": self.mode,
            "address": self.address, "gateway": self.gateway, "dns": list(self.dns),
            "metric": self.metric,
        }
        if self.kind == "wifi":
            doc.update(ssid=self.ssid, security=self.security, hidden=self.hidden,
                       passwordGiven=bool(self.password))
        return doc

    def to_secret_json(self) -> dict[str, Any]:
        """The approved settings as the 0600 settings file holds them (with the password)."""
        return {**{k: v for k, v in self.redacted().items() if k != "passwordGiven"},
                "password": self.password}

    @staticmethod
    def from_secret_json(doc: dict[str, Any]) -> NetworkSettings:
        return NetworkSettings(
            interface=str(doc["interface"]), kind=str(doc["kind"]), mode=str(doc["mode"]),
            address=str(doc.get("address", "")), gateway=str(doc.get("gateway", "")),
            dns=tuple(str(d) for d in doc.get("dns", [])), metric=int(doc["metric"]),
            ssid=str(doc.get("ssid", "")), security=str(doc.get("security", "")),
            password=str(doc.get("password", "")), hidden=bool(doc.get("hidden", False)),
        )


@dataclass(frozen=True)
class SettingsProblem:
    message: str


SettingsCheck = NetworkSettings | SettingsProblem


def _absent(settings: dict[str, Any], key: str) -> bool:
    return settings.get(key) in (None, "")


def _interface(
    settings: Any, inventory: NetworkInventory, allowed: frozenset[str]
) -> InterfaceView | SettingsProblem:
    if not isinstance(settings, dict):
        return SettingsProblem("The network settings must be a JSON object.")
    extra = sorted(set(settings) - allowed)
    if extra:
        return SettingsProblem(f"The network settings have unknown fields: {', '.join(extra)}.")
    name = settings.get("interface")
    if not isinstance(name, str) or not name:
        return SettingsProblem("The network settings must name an interface.")
    view = inventory.interface(name)
    if view is None:
        return SettingsProblem(f"{name!r} is not a physical network interface of this host.")
    return view


def check_scan_settings(settings: Any, inventory: NetworkInventory) -> SettingsCheck:
    """scan-wifi carries `{interface}` only: a Wi-Fi interface that can scan now."""
    view = _interface(settings, inventory, frozenset({"interface"}))
    if isinstance(view, SettingsProblem):
        return view
    if view.kind != "wifi":
        return SettingsProblem(f"{view.name} is not a Wi-Fi interface; only Wi-Fi can scan.")
    if not view.scan_supported:
        return SettingsProblem(
            f"{view.name} cannot scan now (the interface must be up and `iw` installed)."
        )
    return NetworkSettings(interface=view.name, kind="wifi", mode="")


def check_configure_settings(settings: Any, inventory: NetworkInventory) -> SettingsCheck:
    view = _interface(settings, inventory, SETTINGS_FIELDS)
    if isinstance(view, SettingsProblem):
        return view
    assert isinstance(settings, dict)
    if not inventory.supported:
        return SettingsProblem(inventory.message)
    if not view.editable:
        return SettingsProblem(f"{view.name} cannot be edited here: {view.why_not_editable}.")
    checks = (_mode, _metric, _dns, _addressing, _wifi, _cluster)
    approved = NetworkSettings(interface=view.name, kind=view.kind, mode="", metric=view.metric)
    for check in checks:
        result = check(settings, view, approved)
        if isinstance(result, SettingsProblem):
            return result
        approved = result
    return approved


def _mode(settings: dict[str, Any], view: InterfaceView, s: NetworkSettings) -> SettingsCheck:
    mode = settings.get("mode")
    if mode not in ("dhcp", "static"):
        return SettingsProblem("The mode must be \"dhcp\" or \"static\".")
    return replace(s, mode=str(mode))


def _metric(settings: dict[str, Any], view: InterfaceView, s: NetworkSettings) -> SettingsCheck:
    if "metric" not in settings:
        return s
    metric = settings["metric"]
    if type(metric) is not int or not 1 <= metric <= 65535:
        return SettingsProblem("The route metric must be an integer from 1 to 65535.")
    return replace(s, metric=metric)


def _dns(settings: dict[str, Any], view: InterfaceView, s: NetworkSettings) -> SettingsCheck:
    import ipaddress  # here, not at the top: inspect reads no address (~1.5 ms)

    dns = settings.get("dns", [])
    if dns is None:
        dns = []
    if not isinstance(dns, list) or len(dns) > MAX_DNS:
        return SettingsProblem(f"DNS must be a list of at most {MAX_DNS} IP addresses.")
    servers: list[str] = []
    for item in dns:
        try:
            servers.append(str(ipaddress.ip_address(item)) if isinstance(item, str) else "")
        except ValueError:
            servers.append("")
        if not servers[-1]:
            return SettingsProblem(f"The DNS server {str(item)[:64]!r} is not an IP address.")
    return replace(s, dns=tuple(servers))


def _addressing(
    settings: dict[str, Any], view: InterfaceView, s: NetworkSettings
) -> SettingsCheck:
    import ipaddress

    if s.mode == "dhcp":
        if not _absent(settings, "address") or not _absent(settings, "gateway"):
            return SettingsProblem("DHCP takes no static address or gateway.")
        return s
    text = settings.get("address")
    if not isinstance(text, str) or "/" not in text:
        return SettingsProblem("A static address must be an IPv4 address with a prefix, "
                               "e.g. 192.168.1.20/24.")
    try:
        iface = ipaddress.IPv4Interface(text)
    except ValueError:
        return SettingsProblem(f"The static address {text[:64]!r} is not IPv4 with a prefix.")
    ip, net = iface.ip, iface.network
    if ip.is_unspecified or ip.is_multicast or ip.is_loopback:
        return SettingsProblem(f"{ip} cannot be a host address (unspecified, multicast or "
                               "loopback).")
    if net.prefixlen == 0:
        return SettingsProblem("The prefix length must be greater than 0.")
    if net.prefixlen < 31 and ip in (net.network_address, net.broadcast_address):
        return SettingsProblem(f"{ip} is the network or broadcast address of {net}.")
    s = replace(s, address=f"{ip}/{net.prefixlen}")
    gateway = settings.get("gateway")
    if _absent(settings, "gateway"):
        return s
    if not isinstance(gateway, str):
        return SettingsProblem("The gateway must be an IPv4 address.")
    try:
        gw = ipaddress.IPv4Address(gateway)
    except ValueError:
        return SettingsProblem(f"The gateway {gateway[:64]!r} is not an IPv4 address.")
    if gw not in net:
        return SettingsProblem(f"The gateway {gw} is not inside {net}.")
    if gw == ip:
        return SettingsProblem("The gateway cannot be the interface's own address.")
    return replace(s, gateway=str(gw))


def valid_ssid(value: Any) -> bool:
    """1–32 bytes of UTF-8 without control characters."""
    return isinstance(value, str) and _ssid_ok(value)


def _no_surrogates(value: Any) -> bool:
    return isinstance(value, str) and not any(0xD800 <= ord(c) <= 0xDFFF for c in value)


def valid_wpa_passphrase(value: str) -> bool:
    if len(value) == 64 and set(value) <= HEX_DIGITS:
        return True
    return 8 <= len(value) <= 63 and all(0x20 <= ord(c) <= 0x7E for c in value)


def _wifi(settings: dict[str, Any], view: InterfaceView, s: NetworkSettings) -> SettingsCheck:
    if view.kind != "wifi":
        given = [f for f in WIFI_FIELDS if f in settings and settings[f] is not None]
        if given:
            return SettingsProblem(f"An Ethernet interface takes no Wi-Fi settings "
                                   f"({', '.join(given)}).")
        return s
    ssid = settings.get("ssid")
    if not isinstance(ssid, str) or not valid_ssid(ssid):
        return SettingsProblem("The SSID must be 1–32 bytes without control characters.")
    security = settings.get("security")
    if security not in ("open", "wpa-psk"):
        return SettingsProblem("The Wi-Fi security must be \"open\" or \"wpa-psk\".")
    hidden = settings.get("hidden", False)
    if not isinstance(hidden, bool):
        return SettingsProblem("hidden must be true or false.")
    password = settings.get("password")
    if password is None:
        password = ""
    if not isinstance(password, str):
        return SettingsProblem("The Wi-Fi password must be text.")
    if security == "open":
        if password:
            return SettingsProblem("An open network takes no password.")
    elif password:
        if not valid_wpa_passphrase(password):
            return SettingsProblem("A WPA passphrase must be 8–63 printable ASCII characters "
                                   "or a 64-digit hexadecimal key.")
    elif view.wifi is None or ssid not in view.wifi.saved_key_ssids:
        return SettingsProblem(
            f"A password is needed: this host has no saved key for {ssid!r} to keep."
        )
    return replace(s, ssid=ssid, security=str(security), password=password, hidden=hidden)


def _ssid_ok(ssid: str) -> bool:
    if not _no_surrogates(ssid) or has_control_characters(ssid):
        return False
    return 1 <= len(ssid.encode("utf-8")) <= 32


def _configured(view: InterfaceView) -> str:
    if view.configured_mode == "static":
        return f"the static address {view.configured_address}"
    return "no IPv4"


def _cluster(settings: dict[str, Any], view: InterfaceView, s: NetworkSettings) -> SettingsCheck:
    """A management address stays where it is: moving it needs a cluster migration."""
    if not view.cluster_addresses:
        return s
    carried = ", ".join(view.cluster_addresses)
    if s.mode == "dhcp" and view.configured_mode != "dhcp":
        return SettingsProblem(
            f"{view.name} carries the cluster address {carried}: it may only keep it, and a "
            f"switch to DHCP (netplan configures {_configured(view)} on it now) could change "
            "it."
        )
    if s.mode == "static" and s.address.split("/")[0] not in view.cluster_addresses:
        return SettingsProblem(
            f"{view.name} carries the cluster address {carried}: a static address must keep "
            "it (changing the management address needs a cluster migration)."
        )
    if view.kind == "wifi" and view.wifi is not None and s.ssid != view.wifi.connected_ssid:
        return SettingsProblem(
            f"{view.name} carries the cluster address {carried}: its Wi-Fi network "
            f"({view.wifi.connected_ssid!r}) cannot change."
        )
    return s
