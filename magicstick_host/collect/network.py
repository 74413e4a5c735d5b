"""The network evidence: interfaces, addresses, routes, the netplan configuration, Wi-Fi links.

Files are read through the host filesystem port, the tools (`ip`, `netplan`, `iw`) run through
the command runner (on a simulated host, the simulator answers). Nothing here fails on what it
finds: every gap is a line in `NetworkEvidence.problems`, and the capability is then withdrawn
(domain/network/capability.py), never guessed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from magicstick_host.collect.reader import Reader
from magicstick_host.domain.network.evidence import (
    FOREIGN_NETPLAN_DIRS,
    MAX_NETPLAN_FILE_BYTES,
    NETPLAN_DIR,
    NetplanFile,
    NetworkEvidence,
    SysNetInterface,
    WifiLink,
)
from magicstick_host.domain.parsers import ParseError
from magicstick_host.domain.parsers.network import (
    parse_default_routes,
    parse_ip_addresses,
    parse_iw_link,
)
from magicstick_host.errors import MagicstickError
from magicstick_host.lite_dataclasses import replace
from magicstick_host.ports.command_memo import CommandMemo, recall_document, remember_document
from magicstick_host.ports.hostfs import HostFS, HostReadError
from magicstick_host.ports.runner import NOT_FOUND, TIMED_OUT, CommandResult, CommandRunner

if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")

SYS_CLASS_NET = "/sys/class/net"
IP_TIMEOUT_S = 5.0
NETPLAN_GET_TIMEOUT_S = 15.0
IW_TIMEOUT_S = 5.0
# /sys/class/net holds a few entries per port; far more is not a host this worker edits
MAX_SYS_INTERFACES = 256

IP_ADDRESS_ARGV = ("ip", "-j", "address", "show")
IP_ROUTE_ARGV = ("ip", "-j", "-4", "route", "show", "default")
NETPLAN_GET_ARGV = ("netplan", "get", "all")
# what the memo's documents were parsed by (ports/netplan_yaml.py); a change there changes it
NETPLAN_PARSE_VERSION = "netplan-2"


def iw_link_argv(interface: str) -> tuple[str, ...]:
    return ("iw", "dev", interface, "link")


def collect_network(
    fs: HostFS, runner: CommandRunner, netplan_memo: CommandMemo | None = None
) -> NetworkEvidence:
    r = Reader(fs)
    problems: list[str] = []
    sys_interfaces = _sys_interfaces(r)
    links = _command(runner, IP_ADDRESS_ARGV, IP_TIMEOUT_S, problems, parse_ip_addresses)
    routes = _command(runner, IP_ROUTE_ARGV, IP_TIMEOUT_S, problems, parse_default_routes)
    netplan_files = _netplan_files(r, NETPLAN_DIR)
    foreign: list[str] = []
    for directory in FOREIGN_NETPLAN_DIRS:
        names = r.list_dir(directory, f"network.netplan{directory}", optional=True)
        foreign += [f"{directory}/{n}" for n in names or () if n.endswith(".yaml")]
    key = _netplan_key(netplan_files, foreign)
    found, remembered = recall_document(netplan_memo, key)
    recalled = _recalled(remembered, netplan_files) if found else None
    if recalled is not None:
        netplan_get, parsed = recalled
    else:
        parsed = {f.path: _parse_file(f.text) for f in netplan_files or () if f.text is not None}
        result = _run(runner, NETPLAN_GET_ARGV, NETPLAN_GET_TIMEOUT_S)
        netplan_get = _parsed(result, problems, _load_netplan_yaml)
        if netplan_get is not None:
            remember_document(netplan_memo, key, {"get": netplan_get, "files": parsed})
    if netplan_files is not None:
        netplan_files = tuple(_with_document(f, parsed.get(f.path)) for f in netplan_files)
    wifi_links: dict[str, WifiLink] = {}
    iw_present = False
    for iface in sys_interfaces or ():
        if not (iface.physical and iface.wireless):
            continue
        result = _run(runner, iw_link_argv(iface.name), IW_TIMEOUT_S)
        if result.returncode == NOT_FOUND:
            continue  # no iw: that card cannot be checked or scanned, the rest is unaffected
        iw_present = True
        # an unreadable Wi-Fi link makes that interface non-editable, not the whole host
        link = _parsed(result, [], parse_iw_link)
        if link is not None:
            wifi_links[iface.name] = link
    problems += [u.reason for u in r.unknowns]
    return NetworkEvidence(
        sys_interfaces=sys_interfaces,
        links=links,
        default_routes=routes,
        netplan_files=netplan_files,
        foreign_netplan_files=tuple(foreign),
        netplan_get=netplan_get,
        wifi_links=wifi_links,
        iw_present=iw_present,
        problems=tuple(problems),
    )


def _sys_interfaces(r: Reader) -> tuple[SysNetInterface, ...] | None:
    names = r.list_dir(SYS_CLASS_NET, "network.interfaces")
    if names is None:
        return None
    if len(names) > MAX_SYS_INTERFACES:
        r.unknown("network.interfaces", SYS_CLASS_NET, f"more than {MAX_SYS_INTERFACES} entries")
        return None
    found: list[SysNetInterface] = []
    for name in names:
        base = f"{SYS_CLASS_NET}/{name}"
        field = f"network.interfaces.{name}"
        physical = r.exists(f"{base}/device", field, otherwise=False)
        wireless = r.is_dir(f"{base}/wireless", field) is True
        mac = r.text(f"{base}/address", field, optional=not physical)
        state = r.text(f"{base}/operstate", field, optional=not physical)
        found.append(
            SysNetInterface(
                name=name,
                physical=physical,
                wireless=wireless,
                mac=mac.strip().lower() if mac is not None else None,
                operstate=state.strip().lower() if state is not None else None,
            )
        )
    return tuple(found)


def _netplan_key(files: tuple[NetplanFile, ...] | None, foreign: list[str]) -> str:
    """What `netplan get all` answers from, and the files parse from: the name and content of
    every file it merges, or "" (ask netplan every time) when a file could not be read whole or
    lives elsewhere too."""
    if files is None or foreign or any(f.text is None or f.symlink for f in files):
        return ""
    listing = [[f.path, f.sha256] for f in sorted(files, key=lambda f: f.path)]
    return f"{NETPLAN_PARSE_VERSION}:{_sha256_hex(repr(listing).encode('utf-8'))}"


# a file's parse: {"document": ...} or {"problem": "why it does not parse"}
if TYPE_CHECKING:
    FileParse = dict[str, Any]


def _load_netplan_yaml(text: str) -> Any:
    # imported on first use: PyYAML is the largest import an idle tick would otherwise pay for
    from magicstick_host.ports.netplan_yaml import load_netplan_yaml

    return load_netplan_yaml(text)


def _parse_file(text: str) -> FileParse:
    try:
        return {"document": _load_netplan_yaml(text)}
    except ParseError as exc:
        return {"problem": str(exc)}


def _recalled(remembered: object,
              files: tuple[NetplanFile, ...] | None) -> tuple[Any, dict[str, FileParse]] | None:
    """The memo's (netplan get, parse of each file), if it is whole for these files."""
    if not isinstance(remembered, dict) or "get" not in remembered:
        return None
    parsed = remembered.get("files")
    paths = {f.path for f in files or ()}
    if not isinstance(parsed, dict) or set(parsed) != paths:
        return None
    if not all(isinstance(p, dict) and (set(p) == {"document"} or (
            set(p) == {"problem"} and isinstance(p["problem"], str))) for p in parsed.values()):
        return None
    return remembered["get"], parsed


def _with_document(file: NetplanFile, parse: FileParse | None) -> NetplanFile:
    if parse is None:
        return file
    if "problem" in parse:
        return replace(file, problem=parse["problem"])
    return replace(file, document=parse["document"])


def _netplan_files(r: Reader, directory: str) -> tuple[NetplanFile, ...] | None:
    names = r.list_dir(directory, "network.netplan", optional=True)
    if names is None:
        return None
    files: list[NetplanFile] = []
    for name in names:
        if not name.endswith(".yaml"):
            continue
        path = f"{directory}/{name}"
        if _is_symlink(r.fs, path):
            files.append(NetplanFile(path, None, "", symlink=True, problem="is a symlink"))
            continue
        try:
            text = r.fs.read_text(path, max_bytes=MAX_NETPLAN_FILE_BYTES)
        except HostReadError as exc:
            files.append(NetplanFile(path, None, "", problem=exc.reason))
            continue
        digest = _sha256_hex(text.encode("utf-8"))
        files.append(NetplanFile(path, text, digest))  # parsed by the caller, or remembered
    return tuple(files)


def _is_symlink(fs: HostFS, path: str) -> bool:
    """The port's readlink answers "not a symlink" for a plain file, a name for a link."""
    try:
        return fs.readlink_basename(path) is not None
    except HostReadError:
        return False


def _run(runner: CommandRunner, argv: tuple[str, ...], timeout: float) -> CommandResult:
    try:
        return runner.run(argv, timeout=timeout)
    except (OSError, ValueError, MagicstickError) as exc:
        # it could not run (or a simulated host cannot be read): a gap, never a crash
        return CommandResult(argv, NOT_FOUND, "", str(exc)[:200] or "failed to start")


def _parsed(result: CommandResult, problems: list[str], parser: Callable[[str], T]) -> T | None:
    what = " ".join(result.argv)
    if result.returncode == NOT_FOUND:
        problems.append(f"{what}: not found")
        return None
    if result.returncode == TIMED_OUT:
        problems.append(f"{what}: timed out")
        return None
    if not result.ok:
        last = (result.stderr or result.stdout).strip().splitlines()
        problems.append(f"{what}: exited {result.returncode}: {last[-1][:200] if last else ''}")
        return None
    try:
        return parser(result.stdout)
    except ParseError as exc:
        problems.append(f"{what}: {exc}")
        return None


def _command(
    runner: CommandRunner,
    argv: tuple[str, ...],
    timeout: float,
    problems: list[str],
    parser: Callable[[str], T],
) -> T | None:
    return _parsed(_run(runner, argv, timeout), problems, parser)


def _sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
