"""The host simulator's network: `ip`, `iw`, `netplan get|generate|apply`, and the transient
timer of a network trial (`systemd-run --on-active=`, `systemctl stop <unit>.timer`).

Dispatched from sim/runner.py for hosts that have a network model (`Host.network`). Each
command reads the host, and the ones that change it write it back:
- `netplan generate` merges /etc/netplan, refuses what netplan refuses (exit 1), and records
  the result as the configuration the next start or apply uses;
- `netplan apply` generates, then the running network uses it: `ip` and `iw` answer from the
  new live state (sim/network_live.py), so a bad change really loses the link;
- `systemd-run --unit=U --on-active=Ns ...` (no command) records the timer `U.timer`; the
  tests fire it (`due_timers`) and a restart removes it (`boot_network`).
Every effect is recorded in the effects log (`netplan-generate`, `netplan-apply`,
`timer-armed`, `timer-stopped`, `wifi-scan`).

`render_network` puts /sys/class/net and /etc/netplan into the tree, `take_back_netplan`
reads /etc/netplan back (the worker writes there), both called by the shared render/load code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from magicstick_host.domain.parsers import ParseError
from magicstick_host.ports.runner import NOT_FOUND, TIMED_OUT, CommandResult
from magicstick_host.sim.effects_log import record
from magicstick_host.sim.entries import Tree
from magicstick_host.sim.model import Host
from magicstick_host.sim.network_live import (
    NETPLAN_DIR,
    LiveLink,
    live_links,
    merge_netplan,
    netplan_errors,
)
from magicstick_host.sim.network_model import SimNetwork

NET_PCI_BRIDGE = "sys/devices/pci0000:00/0000:00:1c.0"
GENERATE_FAILS = "netplan-generate-fails"
APPLY_FAILS = "netplan-apply-fails"
APPLY_TIMES_OUT = "netplan-apply-times-out"


def handles(host: Host, args: Sequence[str]) -> bool:
    if host.network is None or not args:
        return False
    if args[0] in ("ip", "iw", "netplan", "systemd-run"):
        return True
    return tuple(args[:2]) == ("systemctl", "stop") and len(args) == 3


def run(root: Path, host: Host, args: tuple[str, ...], *, save: Callable[[Host, Path], None],
        now_boottime: Callable[[], float]) -> CommandResult:
    """`save` writes the changed host back (sim/writer.py `write_host`), `now_boottime` is its
    CLOCK_BOOTTIME (sim/clock.py): given by sim/runner.py, since the writer renders this
    module's network and loads it back (they would import each other)."""
    net = host.network
    assert net is not None
    tool = args[0]
    if tool == "ip":
        return _ip(net, args)
    if tool == "iw":
        result = _iw(net, args)
        if args[3:4] == ("scan",) and result.ok:
            record(root, host, "wifi-scan", args)
        return result
    if tool == "netplan":
        result, changed = _netplan(net, args)
        if changed:
            save(host, root)
            record(root, host, f"netplan-{args[1]}", args, rc=result.returncode)
        return result
    result = (_systemd_run(net, args, now_boottime()) if tool == "systemd-run"
              else _systemctl_stop(net, args))
    save(host, root)
    record(root, host, "timer-armed" if tool == "systemd-run" else "timer-stopped", args,
           rc=result.returncode)
    return result


def _ok(args: tuple[str, ...], stdout: str = "") -> CommandResult:
    return CommandResult(args, 0, stdout, "")


def _fail(args: tuple[str, ...], code: int, stderr: str) -> CommandResult:
    return CommandResult(args, code, "", stderr)


# -- ip ----------------------------------------------------------------------------------------


def _ip(net: SimNetwork, args: tuple[str, ...]) -> CommandResult:
    links = live_links(net)
    if args == ("ip", "-j", "address", "show"):
        return _ok(args, json.dumps(_ip_addresses(links)) + "\n")
    if args == ("ip", "-j", "-4", "route", "show", "default"):
        routes = [{"dst": "default", "gateway": gw, "dev": link.name, "protocol": proto,
                   **({"metric": metric} if metric else {}), "flags": []}
                  for link in links if link.carrier for gw, metric, proto in link.routes]
        return _ok(args, json.dumps(sorted(routes, key=lambda r: r.get("metric", 0))) + "\n")
    return _fail(args, 255, f"ip: {' '.join(args[1:])}: not simulated\n")


def _ip_addresses(links: list[LiveLink]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = [{
        "ifindex": 1, "ifname": "lo", "flags": ["LOOPBACK", "UP", "LOWER_UP"], "mtu": 65536,
        "operstate": "UNKNOWN", "link_type": "loopback", "address": "00:00:00:00:00:00",
        "addr_info": [
            {"family": "inet", "local": "127.0.0.1", "prefixlen": 8, "scope": "host"},
            {"family": "inet6", "local": "::1", "prefixlen": 128, "scope": "host"},
        ],
    }]
    for index, link in enumerate(links, start=2):
        flags = ["BROADCAST", "MULTICAST"] + (["UP"] if link.up else [])
        if link.carrier:
            flags.append("LOWER_UP")
        infos = [{"family": "inet6" if ":" in ip else "inet", "local": ip, "prefixlen": prefix,
                  "scope": scope, "label": link.name} for ip, prefix, scope in link.addresses]
        out.append({"ifindex": index, "ifname": link.name, "flags": flags, "mtu": 1500,
                    "operstate": link.operstate, "link_type": "ether", "address": link.mac,
                    "broadcast": "ff:ff:ff:ff:ff:ff", "addr_info": infos})
    return out


# -- iw ----------------------------------------------------------------------------------------


def iw_escape(ssid: str) -> str:
    """iw's print_ssid_escaped: printable ASCII as is (a space only inside), the rest \\xNN."""
    raw = ssid.encode("utf-8")
    out = []
    for i, byte in enumerate(raw):
        char = chr(byte)
        if (0x20 < byte < 0x7F and char != "\\") or (byte == 0x20 and 0 < i < len(raw) - 1):
            out.append(char)
        else:
            out.append(f"\\x{byte:02x}")
    return "".join(out)


def _iw(net: SimNetwork, args: tuple[str, ...]) -> CommandResult:
    if not net.iw_installed:
        return _fail(args, NOT_FOUND, "iw: command not found\n")
    if len(args) != 4 or args[1] != "dev" or args[3] not in ("link", "scan"):
        return _fail(args, 1, "iw: not simulated\n")
    link = next((lk for lk in live_links(net) if lk.name == args[2]), None)
    if link is None or link.kind != "wifi":
        return _fail(args, 237, "command failed: No such device (-19)\n")
    if args[3] == "link":
        ap = link.associated
        if ap is None:
            return _ok(args, "Not connected.\n")
        return _ok(args, f"Connected to {ap.bssid} (on {link.name})\n\tSSID: {iw_escape(ap.ssid)}"
                         f"\n\tfreq: 2437\n\tsignal: {round(ap.signal_dbm)} dBm\n")
    if not link.up:
        return _fail(args, 156, "command failed: Network is down (-100)\n")
    blocks = []
    for ap in net.access_points:
        privacy = " Privacy" if ap.security != "open" else ""
        ssid = "" if ap.hidden else iw_escape(ap.ssid)
        block = (f"BSS {ap.bssid}(on {link.name})\n\tlast seen: 12.345s [boottime]\n"
                 f"\tfreq: 2437\n\tbeacon interval: 100 TUs\n"
                 f"\tcapability: ESS{privacy} ShortSlotTime (0x0411)\n"
                 f"\tsignal: {ap.signal_dbm:.2f} dBm\n\tSSID: {ssid}\n")
        if ap.security == "wpa-psk":
            block += ("\tRSN:\t * Version: 1\n\t\t * Group cipher: CCMP\n"
                      "\t\t * Authentication suites: PSK\n")
        blocks.append(block)
    return _ok(args, "".join(blocks))


# -- netplan -------------------------------------------------------------------------------------


def _generated(net: SimNetwork) -> tuple[dict[str, object] | None, str]:
    try:
        merged = merge_netplan(net)
    except ParseError as exc:
        return None, f"Error in network definition: {exc}\n"
    problems = netplan_errors(merged)
    if problems:
        return None, "".join(f"Error in network definition: {p}\n" for p in problems)
    return merged, ""


def _netplan(net: SimNetwork, args: tuple[str, ...]) -> tuple[CommandResult, bool]:
    command = args[1:2]
    if args[1:] == ("get", "all") or args[1:] == ("get",):
        from magicstick_host.ports.netplan_yaml import dump_netplan_yaml  # the YAML, only here

        merged, error = _generated(net)
        if merged is None:
            return _fail(args, 1, error), False
        return _ok(args, dump_netplan_yaml({"network": merged}) if merged else ""), False
    if command == ("generate",) and len(args) == 2:
        if GENERATE_FAILS in net.faults:
            net.faults.remove(GENERATE_FAILS)
            return _fail(args, 1, "netplan generate: simulated failure\n"), True
        merged, error = _generated(net)
        if merged is None:
            return _fail(args, 1, error), True
        net.generated_json = json.dumps(merged)
        return _ok(args), True
    if command == ("apply",) and len(args) == 2:
        for fault, code in ((APPLY_FAILS, 1), (APPLY_TIMES_OUT, TIMED_OUT)):
            if fault in net.faults:
                net.faults.remove(fault)
                return _fail(args, code, f"netplan apply: simulated {fault}\n"), True
        merged, error = _generated(net)
        if merged is None:
            return _fail(args, 1, error), True
        net.generated_json = net.applied_json = json.dumps(merged)
        return _ok(args), True
    return _fail(args, 2, f"netplan: {' '.join(args[1:])}: not simulated\n"), False


# -- the transient rollback timer ------------------------------------------------------------------

_ON_ACTIVE = re.compile(r"^--on-active=([0-9]+)s?$")


def _systemd_run(net: SimNetwork, args: tuple[str, ...], now_boottime: float) -> CommandResult:
    unit = next((a.removeprefix("--unit=") for a in args if a.startswith("--unit=")), "")
    seconds = next((int(m.group(1)) for a in args if (m := _ON_ACTIVE.match(a))), None)
    commands = [a for a in args[1:] if not a.startswith("--")]
    if not unit or seconds is None or commands:
        return _fail(args, 1, "systemd-run: only `--unit=U --on-active=N` timers are simulated\n")
    if unit in net.timers:
        return _fail(args, 1, f"Failed to start transient timer unit: Unit {unit}.timer was "
                              "already loaded or has a fragment file.\n")
    net.timers[unit] = seconds
    net.timers_due[unit] = now_boottime + seconds
    return _ok(args, f"Running timer as unit: {unit}.timer\nWill run service as unit: "
                     f"{unit}.service\n")


def _systemctl_stop(net: SimNetwork, args: tuple[str, ...]) -> CommandResult:
    unit = args[2].removesuffix(".timer")
    if not args[2].endswith(".timer") or unit not in net.timers:
        return _fail(args, 5, f"Failed to stop {args[2]}: Unit {args[2]} not loaded.\n")
    del net.timers[unit]
    net.timers_due.pop(unit, None)
    return _ok(args)


# -- boot, tree ----------------------------------------------------------------------------------


def boot_network(host: Host) -> None:
    """A restart: the transient timers are gone, and systemd's netplan generator renders
    /etc/netplan before any unit runs; the network has not started yet (`start_network`)."""
    net = host.network
    if net is None:
        return
    net.timers = {}
    net.timers_due = {}
    merged, _ = _generated(net)
    net.generated_json = json.dumps(merged) if merged is not None else ""
    net.applied_json = ""


def start_network(host: Host) -> None:
    """systemd-networkd starts on what `netplan generate` last rendered in this boot."""
    net = host.network
    if net is not None:
        net.applied_json = net.generated_json


def render_network(host: Host, tree: Tree) -> None:
    net = host.network
    if net is None:
        return
    tree.dir(NETPLAN_DIR)
    for path, text in net.netplan_files.items():
        tree.file(path, text)
    tree.dir("sys/class/net")
    links = {link.name: link for link in live_links(net)}
    virtual = "sys/devices/virtual/net/lo"
    tree.link("sys/class/net/lo", "../../devices/virtual/net/lo")
    tree.line(f"{virtual}/address", "00:00:00:00:00:00")
    tree.line(f"{virtual}/operstate", "unknown")
    for index, iface in enumerate(net.interfaces, start=1):
        if iface.physical:
            device = f"{NET_PCI_BRIDGE}/0000:{index:02x}:00.0"
            base = f"{device}/net/{iface.name}"
            tree.link(f"{base}/device", f"../../../0000:{index:02x}:00.0")
        else:
            base = f"sys/devices/virtual/net/{iface.name}"
        tree.link(f"sys/class/net/{iface.name}", "../../" + base.removeprefix("sys/"))
        tree.line(f"{base}/address", iface.mac)
        tree.line(f"{base}/operstate", links[iface.name].operstate.lower())
        if iface.kind == "wifi":
            tree.dir(f"{base}/wireless")


def take_back_netplan(host: Host, root: Path) -> None:
    """The *.yaml files now in /etc/netplan are the host's (the worker writes there)."""
    net = host.network
    if net is None:
        return
    directory = root / NETPLAN_DIR
    files: dict[str, str] = {}
    if directory.is_dir() and not directory.is_symlink():
        for item in sorted(directory.iterdir()):
            if item.name.endswith(".yaml") and item.is_file() and not item.is_symlink():
                files[f"{NETPLAN_DIR}/{item.name}"] = item.read_text(encoding="utf-8")
    net.netplan_files = files


def due_timers(host: Host) -> dict[str, int]:
    """The armed transient timers (unit -> seconds after arming), for the tests to fire."""
    return dict(host.network.timers) if host.network is not None else {}
