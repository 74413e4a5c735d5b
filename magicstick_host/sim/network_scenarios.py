"""Simulated hosts with a network (`Host.network`): the shapes network.md must handle.

All are a ready Strix Halo on Ubuntu 26.04 (the appliance) with a network of its own:
- `network-ethernet-dhcp`: the cluster address 192.168.1.50 by DHCP on enp1s0 (cloud-init's
  MAC-matched file), a static lab port enp2s0, a Wi-Fi card on a WPA network, and in the air
  an open network and a hidden one;
- `network-ethernet-static`: the cluster address 192.168.1.20 static on enp1s0;
- `network-wifi-cluster`: the cluster address by DHCP over Wi-Fi (wlp3s0, WPA);
- `network-wifi-open` / `network-wifi-hidden`: Wi-Fi joined to an open / a hidden network;
- `network-not-editable`: interfaces with two IPv4 addresses, 802.1X, a non-default route,
  and an EAP access point;
- `network-unsupported`: a bridge in /etc/netplan (the capability is withdrawn).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from magicstick_host.sim.builders import strix_host
from magicstick_host.sim.model import Host
from magicstick_host.sim.network_live import merge_netplan
from magicstick_host.sim.network_model import AccessPoint, Segment, SimInterface, SimNetwork

ETH0_MAC, ETH1_MAC, WIFI_MAC = "58:47:ca:70:11:01", "58:47:ca:70:11:02", "a0:80:69:5d:3e:21"
HOME_PASSPHRASE = "correct horse battery"
ATTIC_PASSPHRASE = "attic-secret-42"
CLOUD_INIT = "etc/netplan/50-cloud-init.yaml"
TARGET = "7.0.0-31-generic"


def _segments() -> dict[str, Segment]:
    return {
        "lan": Segment("192.168.1.0/24", "192.168.1.1",
                       leases={ETH0_MAC: "192.168.1.50", WIFI_MAC: "192.168.1.60"},
                       dns=["192.168.1.1"]),
        "lab": Segment("10.20.0.0/24", "10.20.0.1"),
        "home-wifi": Segment("192.168.1.0/24", "192.168.1.1",
                             leases={WIFI_MAC: "192.168.1.60", ETH0_MAC: "192.168.1.50"}),
        "cafe": Segment("172.16.5.0/24", "172.16.5.1", leases={WIFI_MAC: "172.16.5.77"}),
        "attic": Segment("10.77.0.0/24", "10.77.0.1", leases={WIFI_MAC: "10.77.0.9"}),
    }


def _air() -> list[AccessPoint]:
    return [
        AccessPoint("Home", "3c:84:6a:10:20:30", "home-wifi", "wpa-psk", HOME_PASSPHRASE, -48.0),
        AccessPoint("Home", "3c:84:6a:10:20:31", "home-wifi", "wpa-psk", HOME_PASSPHRASE, -71.0),
        AccessPoint("Cafe Libre", "02:1a:11:f0:00:01", "cafe", "open", "", -63.0),
        AccessPoint("Attic", "02:1a:11:f0:00:02", "attic", "wpa-psk", ATTIC_PASSPHRASE, -55.0,
                    hidden=True),
    ]


def _interfaces(*, eth1: bool = True) -> list[SimInterface]:
    found = [SimInterface("enp1s0", "ethernet", ETH0_MAC, "lan")]
    if eth1:
        found.append(SimInterface("enp2s0", "ethernet", ETH1_MAC, "lab"))
    found += [
        SimInterface("wlp3s0", "wifi", WIFI_MAC),
        # what K3s adds: not physical, never listed
        SimInterface("cni0", "ethernet", "4a:9e:2c:00:00:01", physical=False),
    ]
    return found


def _host(name: str, desc: str, files: dict[str, str], *, eth1: bool = True) -> Host:
    host = strix_host(name, desc, "26.04", TARGET, with_uma=True)
    net = SimNetwork(interfaces=_interfaces(eth1=eth1), segments=_segments(),
                     access_points=_air(), netplan_files=dict(files))
    net.generated_json = net.applied_json = json.dumps(merge_netplan(net))
    host.network = net
    return host


ETHERNET_DHCP = f"""\
# This file is generated from information provided by the datasource.  Changes
# to it will not persist across an instance reboot.
network:
    version: 2
    ethernets:
        enp1s0:
            match:
                macaddress: {ETH0_MAC}
            set-name: enp1s0
            dhcp4: true
            dhcp6: true
            accept-ra: true
"""

LAB_AND_WIFI = """\
network:
  version: 2
  renderer: networkd
  ethernets:
    enp2s0:
      addresses: [10.20.0.10/24, "fd20::10/64"]
      nameservers:
        addresses: [10.20.0.1]
        search: [lab.internal]
  wifis:
    wlp3s0:
      dhcp4: true
      dhcp4-overrides:
        route-metric: 600
      access-points:
        "Home":
          password: "correct horse battery"
        "Old Flat":
          password: "an-older-saved-key"
"""

STATIC = """\
network:
  version: 2
  ethernets:
    enp1s0:
      addresses:
        - 192.168.1.20/24
      routes:
        - to: default
          via: 192.168.1.1
          metric: 100
      nameservers:
        addresses: [192.168.1.1, 1.1.1.1]
"""

WIFI_CLUSTER = """\
network:
  version: 2
  wifis:
    wlp3s0:
      dhcp4: true
      access-points:
        Home:
          auth:
            key-management: psk
            password: "correct horse battery"
"""

WIFI_OPEN = """\
network:
  version: 2
  ethernets:
    enp1s0: {dhcp4: true}
  wifis:
    wlp3s0:
      dhcp4: true
      access-points:
        "Cafe Libre": {}
"""

WIFI_HIDDEN = f"""\
network:
  version: 2
  ethernets:
    enp1s0: {{dhcp4: true}}
  wifis:
    wlp3s0:
      dhcp4: true
      access-points:
        Attic:
          hidden: true
          password: "{ATTIC_PASSPHRASE}"
"""

NOT_EDITABLE = """\
network:
  version: 2
  ethernets:
    enp1s0:
      dhcp4: true
    enp2s0:
      addresses: [10.20.0.10/24, 10.20.0.11/24]
      routes:
        - to: 10.99.0.0/16
          via: 10.20.0.1
  wifis:
    wlp3s0:
      dhcp4: true
      access-points:
        Campus:
          auth:
            key-management: eap
            method: peap
            identity: "student@example.edu"
            password: "not-a-psk"
"""

UNSUPPORTED = """\
network:
  version: 2
  ethernets:
    enp1s0: {dhcp4: false}
  bridges:
    br0:
      interfaces: [enp1s0]
      dhcp4: true
"""

NETWORK_SCENARIOS: list[tuple[str, str, Callable[[str, str], Host]]] = [
    ("network-ethernet-dhcp",
     "Strix Halo appliance: cluster address by DHCP on enp1s0, static lab port, Wi-Fi on WPA",
     lambda n, d: _host(n, d, {CLOUD_INIT: ETHERNET_DHCP,
                              "etc/netplan/60-lab-and-wifi.yaml": LAB_AND_WIFI})),
    ("network-ethernet-static",
     "Strix Halo appliance: cluster address 192.168.1.20 static on enp1s0",
     lambda n, d: _host(n, d, {"etc/netplan/01-static.yaml": STATIC}, eth1=False)),
    ("network-wifi-cluster",
     "Strix Halo appliance: cluster address by DHCP over Wi-Fi (wlp3s0, WPA \"Home\")",
     lambda n, d: _host(n, d, {"etc/netplan/01-wifi.yaml": WIFI_CLUSTER}, eth1=False)),
    ("network-wifi-open",
     "Strix Halo appliance: enp1s0 by DHCP, Wi-Fi joined to the open network \"Cafe Libre\"",
     lambda n, d: _host(n, d, {"etc/netplan/01-open.yaml": WIFI_OPEN}, eth1=False)),
    ("network-wifi-hidden",
     "Strix Halo appliance: enp1s0 by DHCP, Wi-Fi joined to the hidden WPA network \"Attic\"",
     lambda n, d: _host(n, d, {"etc/netplan/01-hidden.yaml": WIFI_HIDDEN}, eth1=False)),
    ("network-not-editable",
     "Strix Halo appliance: two IPv4 addresses and a route on enp2s0, an EAP access point",
     lambda n, d: _host(n, d, {"etc/netplan/01-complex.yaml": NOT_EDITABLE})),
    ("network-unsupported",
     "Strix Halo appliance whose netplan configures a bridge: network settings withdrawn",
     lambda n, d: _host(n, d, {"etc/netplan/01-bridge.yaml": UNSUPPORTED}, eth1=False)),
]
