"""The network of a simulated host, as data (a field of `sim.model.Host`).

What is plugged where (`Segment`s: an Ethernet LAN, or the LAN behind a Wi-Fi access point),
which access points are in the air, which netplan files the host has, and which configuration
the running network uses. The live state (`ip`, `iw`) is derived from the running
configuration and the environment by sim/network.py, so a wrong configuration really loses the
link: a wrong Wi-Fi key never associates, a static address outside the LAN's subnet reaches
nothing, a switch to DHCP on a LAN without a lease for this MAC gets no address.
"""

from __future__ import annotations

from magicstick_host.lite_dataclasses import dataclass, field


@dataclass
class Segment:
    """A LAN: its subnet, router and DHCP server (leases by MAC)."""

    subnet: str  # e.g. 192.168.1.0/24
    gateway: str  # e.g. 192.168.1.1
    # DHCP leases by lowercase MAC; a MAC without one gets no address over DHCP
    leases: dict[str, str] = field(default_factory=dict)
    dns: list[str] = field(default_factory=list)


@dataclass
class AccessPoint:
    ssid: str
    bssid: str
    segment: str  # the LAN behind it
    security: str = "wpa-psk"  # wpa-psk | open
    passphrase: str = ""
    signal_dbm: float = -50.0
    # hidden: it does not broadcast its SSID, so only a `hidden: true` entry (scan_ssid=1)
    # finds it
    hidden: bool = False


@dataclass
class SimInterface:
    name: str
    kind: str  # ethernet | wifi
    mac: str
    # the LAN an Ethernet cable goes to ("" unplugged); Wi-Fi joins via access points
    segment: str = ""
    physical: bool = True


@dataclass
class SimNetwork:
    interfaces: list[SimInterface] = field(default_factory=list)
    segments: dict[str, Segment] = field(default_factory=dict)
    access_points: list[AccessPoint] = field(default_factory=list)
    # relative host path (etc/netplan/x.yaml) -> content; taken back from the tree on every
    # load (sim/writer.py), so what the worker writes there is what the host has
    netplan_files: dict[str, str] = field(default_factory=dict)
    # the `network:` mapping `netplan generate` last rendered (JSON; "" none this boot) and the
    # one the running network uses (JSON; "" while the network has not started this boot)
    generated_json: str = ""
    applied_json: str = ""
    iw_installed: bool = True
    # transient timers armed by `systemd-run` (gone at a restart): unit -> seconds
    timers: dict[str, int] = field(default_factory=dict)
    # when each one elapses: unit -> the host's CLOCK_BOOTTIME then (sim/clock.py)
    timers_due: dict[str, float] = field(default_factory=dict)
    # faults: netplan-generate-fails | netplan-apply-fails | netplan-apply-times-out
    faults: list[str] = field(default_factory=list)
