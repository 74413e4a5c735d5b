"""netplan held to its owner: `netplan get --root-dir DIR all` of the installed netplan.io.

Every example netplan.io ships (found with `dpkg -L netplan.io`, not by path) and generated
files go into a host root of their own, with one physical interface per netplan id in
/sys/class/net. The product's collector then runs (collect_network: the files, `netplan get`
answered by the real netplan on that root, no `ip` addresses, no `iw`), and for every
interface what the report says (configuredMode, configuredAddress, configuredGateway, dns,
metric; for Wi-Fi the configured SSID, hasPassword, security, hidden) must be what netplan's
printed configuration says, read here independently with YAML's own typing (netplan prints
canonical `true`/`false` and numbers). For a single file, our reading of the file as written
(our YAML loader and netplan's typing rules: `dhcp4: yes`, `metric: "100"`) must give the same
fields. Where netplan refuses a file, the capability is withdrawn and nothing is editable.

Divergences kept:
- an entry with a `match:` rule configures whatever interface matches: the fields are compared
  only for entries that configure the interface of their own name; match entries are checked
  to be non-editable when the rule is a wildcard or a driver (the rule is the editor's guard);
- netplan does not keep the order of access points: which one is first (the report's
  configuredSsid when none is connected) is read from `netplan get`, never from the file;
- netplan prints the IPv4 name servers before the IPv6 ones: the report's `dns` is in
  netplan's order (read from `netplan get`); the file's own order is compared as a set;
- `netplan get` accepts files that `netplan generate` refuses for a backend rule (networkd
  wants one route metric for DHCPv4 and DHCPv6): editable is not a promise that the current
  file renders, but that the trial's file does: for the first editable interface of every
  supported case, the managed file of a DHCP and of a static trial must pass the real
  `netplan generate`.
"""

from __future__ import annotations

import ipaddress
import json
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magicstick_host.collect.network import collect_network
from magicstick_host.domain.network import netplan_entries as entries
from magicstick_host.domain.network.capability import (
    INTERFACE_NAME,
    InterfaceView,
    NetworkInventory,
    network_inventory,
)
from magicstick_host.domain.network.netplan_config import managed_document, managed_network
from magicstick_host.domain.network.settings import NetworkSettings, check_configure_settings
from magicstick_host.domain.parsers import ParseError
from magicstick_host.domain.parsers.netplan import netplan_network
from magicstick_host.ports.hostfs import RootedHostFS
from magicstick_host.ports.netplan_yaml import load_netplan_yaml, render_managed
from magicstick_host.ports.runner import NOT_FOUND, CommandResult

pytestmark = pytest.mark.real_commands


def netplan() -> str:
    found = shutil.which("netplan") or ("/usr/sbin/netplan"
                                        if Path("/usr/sbin/netplan").exists() else None)
    assert found, "netplan.io is required: apt-get install -y netplan.io"
    return found


@cache
def shipped_examples() -> tuple[Path, ...]:
    dpkg = shutil.which("dpkg")
    assert dpkg, "dpkg is required to find netplan.io's examples"
    listing = subprocess.run([dpkg, "-L", "netplan.io"], capture_output=True, text=True,
                             timeout=60, check=True).stdout.split("\n")
    # netplan 1.x (Debian unstable, Ubuntu 26.04) ships the examples in netplan-generator, a
    # dependency of netplan.io; 0.x had them in netplan.io itself
    generator = subprocess.run([dpkg, "-L", "netplan-generator"], capture_output=True,
                               text=True, timeout=60, check=False)
    listing += generator.stdout.split("\n") if generator.returncode == 0 else []
    found = tuple(sorted(Path(p) for p in listing if "/examples/" in p and p.endswith(".yaml")))
    assert found, "netplan.io ships no examples here"
    return found


class RealNetplanRunner:
    """`netplan get all` answered by the real netplan on the root; no addresses; no iw."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def run(self, argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None,
            stdout_path: str | None = None) -> CommandResult:
        argv = tuple(argv)
        if argv[:2] == ("netplan", "get"):
            proc = subprocess.run([netplan(), "get", "--root-dir", str(self.root), *argv[2:]],
                                  capture_output=True, text=True, timeout=60, check=False)
            return CommandResult(argv, proc.returncode, proc.stdout, proc.stderr)
        if argv[0] == "ip":
            return CommandResult(argv, 0, "[]", "")
        return CommandResult(argv, NOT_FOUND, "", "not here")


def make_root(root: Path, files: dict[str, str], names: dict[str, bool]) -> None:
    netplan_dir = root / "etc/netplan"
    netplan_dir.mkdir(parents=True)
    for name, text in files.items():
        path = netplan_dir / name
        path.write_text(text)
        path.chmod(0o600)
    for n, (name, wireless) in enumerate(sorted(names.items())):
        base = root / "sys/class/net" / name
        (base / "device").mkdir(parents=True)
        (base / "address").write_text(f"02:00:00:00:{n // 256:02x}:{n % 256:02x}\n")
        (base / "operstate").write_text("up\n")
        if wireless:
            (base / "wireless").mkdir()


def interface_names(texts: list[str]) -> dict[str, bool]:
    """The netplan ids of ethernets and wifis (valid interface names), wireless or not."""
    names: dict[str, bool] = {}
    for text in texts:
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        network = doc.get("network") if isinstance(doc, dict) else None
        for section in ("ethernets", "wifis"):
            items = network.get(section) if isinstance(network, dict) else None
            for key in items if isinstance(items, dict) else ():
                if isinstance(key, str) and INTERFACE_NAME.match(key):
                    names.setdefault(key, section == "wifis")
    return names


def inventory_of(root: Path) -> tuple[NetworkInventory, dict[str, Any] | None]:
    """The product's inventory, and netplan's printed configuration (None: refused)."""
    ev = collect_network(RootedHostFS(str(root)), RealNetplanRunner(root))
    proc = subprocess.run([netplan(), "get", "--root-dir", str(root), "all"],
                          capture_output=True, text=True, timeout=60, check=False)
    printed = yaml.safe_load(proc.stdout) if proc.returncode == 0 else None
    return network_inventory(ev, ()), printed


# -- the oracle's reading of netplan's printed configuration ---------------------------------


def _ipv4(text: Any) -> bool:
    try:
        return ipaddress.ip_interface(str(text)).version == 4
    except ValueError:
        return False


def printed_fields(entry: dict[str, Any], kind: str) -> dict[str, Any]:
    """What netplan's printed entry configures, read with YAML 1.1 typing."""
    addresses = [next(iter(a)) if isinstance(a, dict) else a for a in entry.get("addresses", [])]
    v4 = [str(a) for a in addresses if _ipv4(a)]
    dhcp = entry.get("dhcp4") is True
    defaults = [r for r in entry.get("routes", []) if str(r.get("to")) in ("default", "0.0.0.0/0")
                and (_ipv4(r.get("via")) or str(r.get("to")) == "0.0.0.0/0")]
    gateway = next((str(r["via"]) for r in defaults if "via" in r), str(entry.get("gateway4", "")))
    default_metric = 600 if kind == "wifi" else 100
    # netplan prints an unset metric (UINT_MAX written in the file) as null
    if dhcp:
        metric = entry.get("dhcp4-overrides", {}).get("route-metric")
    else:
        metric = next((r["metric"] for r in defaults if r.get("metric") is not None), None)
    metric = default_metric if metric is None else metric
    fields = {
        "mode": "dhcp" if dhcp else "static" if v4 else "none",
        "address": v4[0] if v4 else "",
        "gateway": gateway,
        "dns": [str(a) for a in entry.get("nameservers", {}).get("addresses", [])],
        "metric": int(metric),
    }
    if kind == "wifi":
        aps = entry.get("access-points") or {}
        ssid = str(next(iter(aps), ""))
        ap = aps.get(ssid) or {}
        auth = ap.get("auth") or {}
        password = ap.get("password", auth.get("password"))
        management = str(auth.get("key-management", "none")).lower()
        security = ("wpa-psk" if management in ("psk", "sae") or (management == "none"
                                                                  and password)
                    else "open" if management == "none" else "wpa-eap")
        fields.update(ssid=ssid, has_password=bool(password), security=security,
                      hidden=ap.get("hidden") is True)
        fields["aps"] = {str(k): printed_ap(v or {}) for k, v in aps.items()}
    return fields


def printed_ap(ap: dict[str, Any]) -> tuple[bool, str, bool]:
    auth = ap.get("auth") or {}
    password = ap.get("password", auth.get("password"))
    management = str(auth.get("key-management", "none")).lower()
    security = ("wpa-psk" if management in ("psk", "sae") or (management == "none" and password)
                else "open" if management == "none" else "wpa-eap")
    return bool(password), security, ap.get("hidden") is True


def without_order(fields: dict[str, Any]) -> dict[str, Any]:
    """Kept divergence: netplan does not keep the order of access points (it prints, and
    renders, them in its own order), so which one is first is netplan's to say: the product
    reads it from `netplan get`; the file as written is compared access point by access point."""
    kept = {k: v for k, v in fields.items() if k not in ("ssid", "has_password", "security",
                                                          "hidden")}
    # and netplan prints the IPv4 name servers before the IPv6 ones, whatever the file's order
    kept["dns"] = sorted(kept["dns"])
    return kept


def view_fields(view: InterfaceView) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "mode": view.configured_mode, "address": view.configured_address,
        "gateway": view.configured_gateway, "dns": list(view.dns), "metric": view.metric}
    if view.wifi is not None:
        fields.update(ssid=view.wifi.configured_ssid, has_password=view.wifi.has_password,
                      security=view.wifi.security, hidden=view.wifi.hidden)
    return fields


def first_ap_fields(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if k != "aps"}


def raw_fields(entry: dict[str, Any], kind: str) -> dict[str, Any]:
    """Our reading of the file as written (before netplan's normalisation)."""
    fields: dict[str, Any] = {
        "mode": entries.configured_mode(entry),
        "address": (entries.ipv4_addresses(entry) or [""])[0],
        "gateway": entries.configured_gateway(entry), "dns": entries.nameservers(entry),
        "metric": entries.configured_metric(entry, kind)}
    if kind == "wifi":
        aps = entries.access_points(entry)
        ssid = next(iter(aps), "")
        ap = aps.get(ssid) or {}
        fields.update(ssid=ssid, has_password=entries.ap_password(ap) is not None,
                      security=entries.ap_security(ap), hidden=entries.ap_hidden(ap))
        fields["aps"] = {k: (entries.ap_password(v) is not None, entries.ap_security(v),
                             entries.ap_hidden(v)) for k, v in aps.items()}
    return fields


def check(root: Path, files: dict[str, str]) -> str:
    """Compare; returns "refused", "unsupported" or "compared" (for the counts)."""
    make_root(root, files, interface_names(list(files.values())))
    inv, printed = inventory_of(root)
    if printed is None:
        assert inv.supported is False
        assert not any(i.editable for i in inv.interfaces)
        return "refused"
    network = printed.get("network") or {}
    for section, kind in (("ethernets", "ethernet"), ("wifis", "wifi")):
        for netplan_id, entry in (network.get(section) or {}).items():
            view = inv.interface(str(netplan_id))
            entry = entry or {}
            if view is None or view.kind != kind:
                continue
            match = entry.get("match")
            if match is not None:
                if "driver" in match or any(c in str(match.get("name", "")) for c in "*?["):
                    for other in inv.interfaces:
                        if entries.matches(str(netplan_id), entry, other.name, other.mac):
                            assert not other.editable, other.name
                continue
            if view.netplan_entry != (section, str(netplan_id)):
                continue  # another entry (a match rule) also configures it: not editable
            assert view_fields(view) == first_ap_fields(printed_fields(entry, kind)), (
                netplan_id, entry)
            if len(files) == 1:
                (text,) = files.values()
                try:
                    raw = netplan_network(load_netplan_yaml(text))
                except ParseError:
                    continue  # our loader refuses what netplan accepted: unsupported, below
                raw_entry = (raw.get(section) or {}).get(str(netplan_id)) or {}
                assert without_order(raw_fields(raw_entry, kind)) == without_order(
                    printed_fields(entry, kind)), netplan_id
    editable = [i for i in inv.interfaces if i.editable] if inv.supported else []
    if editable:
        trial_renders(root, inv, editable[0])
    return "compared" if inv.supported else "unsupported"


def trial_renders(root: Path, inv: NetworkInventory, view: InterfaceView) -> None:
    """What a trial would write for an editable interface (DHCP, then a static address) is a
    configuration the real `netplan generate` renders."""
    for wanted in ({"interface": view.name, "mode": "dhcp", "dns": [], "metric": 100},
                   {"interface": view.name, "mode": "static", "address": "192.168.77.20/24",
                    "gateway": "192.168.77.1", "dns": ["9.9.9.9"], "metric": 100}):
        approved = check_configure_settings(wanted, inv)
        assert isinstance(approved, NetworkSettings), approved
        trial = root / f"trial-{wanted['mode']}"
        (trial / "etc/netplan").mkdir(parents=True)
        path = trial / "etc/netplan/90-magicstick-network.yaml"
        path.write_text(render_managed(managed_document(
            managed_network(inv.effective, view, approved))))
        path.chmod(0o600)
        proc = subprocess.run([netplan(), "generate", "--root-dir", str(trial)],
                              capture_output=True, text=True, timeout=60, check=False)
        assert proc.returncode == 0, (proc.stderr, path.read_text())


# -- the shipped examples --------------------------------------------------------------------


@pytest.mark.parametrize("example", shipped_examples(), ids=lambda p: p.name)
def test_every_shipped_example_reads_as_netplan_prints_it(tmp_path: Path,
                                                          example: Path) -> None:
    check(tmp_path, {"50-example.yaml": example.read_text()})


def test_the_shipped_examples_are_all_there() -> None:
    names = {p.name for p in shipped_examples()}
    # the shapes #25 is about ship as examples: 802.1X Wi-Fi, SR-IOV, offload, static
    assert {"wpa_enterprise.yaml", "sriov.yaml", "offload.yaml", "static.yaml",
            "wireless.yaml"} <= names, names


# -- generated files -------------------------------------------------------------------------

BOOL = st.sampled_from([True, False, "yes", "no", "on", "off", "true", "false", "y", "n",
                        "Yes", "TRUE"])
IPV4 = st.sampled_from(["192.168.1.20/24", "10.0.0.5/8", "172.16.9.1/30"])
IPV6 = st.sampled_from(["fd00::5/64", "2001:db8::1/48"])
METRIC = st.sampled_from([0, 50, 100, "100", 700, "4294967295"])


@st.composite
def ethernet_entry(draw: st.DrawFn, wifi: bool = False) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    if draw(st.booleans()):
        entry["dhcp4"] = draw(BOOL)
    if draw(st.booleans()):
        entry["dhcp6"] = draw(BOOL)
    addresses = draw(st.lists(st.one_of(IPV4, IPV6), max_size=2, unique=True))
    if addresses:
        entry["addresses"] = addresses
    if draw(st.booleans()):
        route: dict[str, Any] = {"to": draw(st.sampled_from(["default", "0.0.0.0/0"])),
                                 "via": draw(st.sampled_from(["192.168.1.1", "10.0.0.1"]))}
        if draw(st.booleans()):
            route["metric"] = draw(METRIC)
        if draw(st.booleans()):
            route["on-link"] = draw(BOOL)
        entry["routes"] = [route]
    if draw(st.booleans()):
        entry.setdefault("dhcp4-overrides", {})["route-metric"] = draw(METRIC)
    if draw(st.booleans()):
        entry["nameservers"] = {"addresses": draw(st.lists(
            st.sampled_from(["1.1.1.1", "9.9.9.9", "fd00::53"]), max_size=2, unique=True))}
    if draw(st.booleans()):
        entry["receive-checksum-offload"] = draw(BOOL)
    if wifi:
        aps: dict[str, Any] = {}
        for ssid in draw(st.lists(st.sampled_from(["Home", "Corp", "Cafe Libre", "yes"]),
                                  max_size=2, unique=True)):
            ap: dict[str, Any] = {}
            kind = draw(st.sampled_from(["open", "password", "psk", "eap", "8021x", "none",
                                         "sae"]))
            if kind == "password":
                ap["password"] = "correct horse battery"
            elif kind == "psk":
                ap["auth"] = {"key-management": "psk", "password": "correct horse battery"}
            elif kind == "sae":
                ap["auth"] = {"key-management": "sae", "password": "correct horse battery"}
            elif kind == "eap":
                ap["auth"] = {"key-management": "eap", "method": "peap", "identity": "me",
                              "password": "not-published"}
            elif kind == "8021x":
                ap["auth"] = {"key-management": "802.1x", "method": "tls", "identity": "me",
                              "client-certificate": "/etc/ssl/me.pem"}
            elif kind == "none":
                ap["auth"] = {"key-management": "none"}
            if draw(st.booleans()):
                ap["hidden"] = draw(BOOL)
            aps[ssid] = ap
        entry["access-points"] = aps
    return entry


@st.composite
def netplan_file(draw: st.DrawFn) -> str:
    network: dict[str, Any] = {"version": 2}
    if draw(st.booleans()):
        network["renderer"] = "networkd"
    eths = draw(st.dictionaries(st.sampled_from(["enp1s0", "enp2s0", "eth0"]), ethernet_entry(),
                                max_size=2))
    if eths:
        network["ethernets"] = eths
    wifis = draw(st.dictionaries(st.sampled_from(["wlp3s0"]), ethernet_entry(wifi=True),
                                 max_size=1))
    if wifis:
        network["wifis"] = wifis
    # JSON is YAML (flow style): quoted strings where the entry has words, as a user may quote
    return json.dumps({"network": network}, indent=1) + "\n"


COUNTS: dict[str, int] = {}

# found by the generated files: netplan get prints the metric netplan keeps as unset as null,
# and the trial wrote that null back, which netplan generate refused for the other interface
UNSET_METRIC_ON_ANOTHER_INTERFACE = json.dumps({"network": {"version": 2, "ethernets": {
    "enp1s0": {}, "enp2s0": {"dhcp4": True, "dhcp6": True,
                             "dhcp4-overrides": {"route-metric": "4294967295"}}}}}) + "\n"


def test_a_metric_netplan_keeps_unset_stays_unset_in_the_trial_file(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    assert check(tmp_path_factory.mktemp("np"),
                 {"50-generated.yaml": UNSET_METRIC_ON_ANOTHER_INTERFACE}) == "compared"


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(netplan_file())
def test_generated_files_read_as_netplan_prints_them(tmp_path_factory: pytest.TempPathFactory,
                                                     text: str) -> None:
    outcome = check(tmp_path_factory.mktemp("np"), {"50-generated.yaml": text})
    COUNTS[outcome] = COUNTS.get(outcome, 0) + 1
