"""What the host shows about its network, as plain immutable data (network.md, "Sources").

Filled by collect/network.py from `ip -j address show`, `ip -j -4 route show default`,
`/sys/class/net/<if>/{device,wireless,address,operstate}`, `netplan get`, the files in
`/etc/netplan/` (and the checks of `/run/netplan`, `/lib/netplan`) and `iw dev <if> link`.

As in domain/evidence.py, a fact that could not be read is `None` (or the collection's
`problems` say why); nothing downstream treats an unknown as "fine".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.lite_dataclasses import dataclass, field

if TYPE_CHECKING:
    from typing import Any

NETPLAN_DIR = "/etc/netplan"
# YAML here would be merged by netplan too, so the worker could not say what it replaces
FOREIGN_NETPLAN_DIRS = ("/run/netplan", "/lib/netplan")
MANAGED_NETPLAN_NAME = "90-magicstick-network.yaml"
MANAGED_NETPLAN_FILE = f"{NETPLAN_DIR}/{MANAGED_NETPLAN_NAME}"
MAX_NETPLAN_FILES = 32
MAX_NETPLAN_FILE_BYTES = 256 * 1024


@dataclass(frozen=True)
class IpAddress:
    """One entry of an interface's `addr_info` in `ip -j address show`."""

    family: str  # "inet" | "inet6"
    local: str  # e.g. 192.168.1.20
    prefixlen: int
    scope: str = "global"  # global | link | host

    @property
    def cidr(self) -> str:
        return f"{self.local}/{self.prefixlen}"


@dataclass(frozen=True)
class IpLink:
    """One interface of `ip -j address show`."""

    name: str
    flags: tuple[str, ...] = ()  # e.g. ("BROADCAST", "MULTICAST", "UP", "LOWER_UP")
    operstate: str = "UNKNOWN"
    mac: str = ""  # `address`, lowercase; "" for interfaces without one
    addresses: tuple[IpAddress, ...] = ()

    @property
    def up(self) -> bool:
        """Administratively up (IFF_UP): what a Wi-Fi scan needs."""
        return "UP" in self.flags

    def ipv4(self) -> tuple[IpAddress, ...]:
        return tuple(a for a in self.addresses if a.family == "inet")


@dataclass(frozen=True)
class DefaultRoute:
    """One entry of `ip -j -4 route show default`."""

    dev: str
    gateway: str = ""  # "" for a device route without a gateway
    metric: int = 0


@dataclass(frozen=True)
class SysNetInterface:
    """`/sys/class/net/<name>`: physical when `device` exists, Wi-Fi when `wireless` does."""

    name: str
    physical: bool
    wireless: bool
    mac: str | None  # `address`, lowercase; None when unreadable
    operstate: str | None  # `operstate`: up | down | dormant | unknown | ...


@dataclass(frozen=True)
class NetplanFile:
    """One YAML file of a netplan directory. `text` is None when it could not be read or is
    not a plain file; `problem` then says why."""

    path: str
    text: str | None
    sha256: str  # of the bytes as read; "" when unread
    symlink: bool = False
    problem: str = ""
    # the document as netplan YAML reads (ports/netplan_yaml.py); None when it does not parse
    # (then `problem` says why) or was not read
    document: dict[str, Any] | None = None


@dataclass(frozen=True)
class WifiLink:
    """`iw dev <if> link`: the SSID it is associated with, "" when not connected."""

    connected_ssid: str


@dataclass(frozen=True)
class NetworkEvidence:
    # /sys/class/net, by name; None when the directory could not be listed
    sys_interfaces: tuple[SysNetInterface, ...] | None = None
    # `ip -j address show`; None when it failed
    links: tuple[IpLink, ...] | None = None
    # `ip -j -4 route show default`; None when it failed
    default_routes: tuple[DefaultRoute, ...] | None = None
    # the *.yaml files of /etc/netplan, sorted by name; None when the directory is unreadable
    netplan_files: tuple[NetplanFile, ...] | None = None
    # *.yaml files found in /run/netplan and /lib/netplan (their host paths)
    foreign_netplan_files: tuple[str, ...] = ()
    # `netplan get all` as a mapping (the merged configuration netplan itself computes);
    # None when it failed or did not parse
    netplan_get: dict[str, Any] | None = None
    # `iw dev <if> link` per Wi-Fi interface; an interface missing here could not be asked
    wifi_links: dict[str, WifiLink] = field(default_factory=dict)
    # whether the `iw` tool exists (a Wi-Fi scan needs it)
    iw_present: bool = False
    # what could not be read, one short line each (path or command: reason)
    problems: tuple[str, ...] = ()

    def link(self, name: str) -> IpLink | None:
        return next((lk for lk in self.links or () if lk.name == name), None)
