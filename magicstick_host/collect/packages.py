"""Installed package versions (dpkg status), the kernels /boot can boot, and whether another
package manager run holds the host now."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from magicstick_host.collect.reader import Reader
from magicstick_host.domain.evidence import PackageInfo, PackageManagerRun
from magicstick_host.domain.parsers import ParseError
from magicstick_host.domain.parsers.dpkg_status import (
    Unsettled,
    installed_versions,
    parse_dpkg_status,
    unsettled_packages,
)
from magicstick_host.ports.command_memo import CommandMemo, recall_document, remember_document
from magicstick_host.ports.hostfs import DPKG_STATUS_MAX_BYTES

DPKG_STATUS = "/var/lib/dpkg/status"
# operations.md, "When another package manager run holds the host": the locks apt and dpkg take
# (the frontend lock first: apt, unattended-upgrades and dpkg run alone hold it), and the one
# unattended-upgrades holds for its whole run, between its dpkg runs too (its LOCK_FILE,
# /var/run/unattended-upgrades.lock; /var/run is a link to /run)
MANAGER_LOCKS = ("/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock",
                 "/run/unattended-upgrades.lock")
MANAGER_FIELD = "packages.managerRun"
COMM_MAX_BYTES = 64
FIELD = "packages.installed"
# what the memo's answers were parsed by; a change of the parser changes it
PARSE_VERSION = "dpkg-status-2"


def collect_packages(
    r: Reader, package_names: Sequence[str], kernel_release: str | None,
    memo: CommandMemo | None = None,
) -> PackageInfo:
    installed, unsettled = _installed(r, package_names, kernel_release, memo)
    run, known = manager_run(r)
    return PackageInfo(installed=installed, boot_kernels=_boot_kernels(r), unsettled=unsettled,
                       manager_run=run, manager_run_known=known)


def manager_run(r: Reader) -> tuple[PackageManagerRun | None, bool]:
    """The first lock another process holds, with that process's command name; and whether
    every lock could be probed. A lock probe takes nothing (fcntl F_GETLK)."""
    known = True
    for path in MANAGER_LOCKS:
        probed, pid = r.lock_holder(path, MANAGER_FIELD)
        known = known and probed
        if pid is None:
            continue
        command = ""
        if pid:
            comm = r.text(f"/proc/{pid}/comm", MANAGER_FIELD, optional=True,
                          max_bytes=COMM_MAX_BYTES)
            # a name the kernel truncates to 15 bytes; nothing printable is kept otherwise
            command = "".join(c for c in (comm or "").strip() if c.isprintable())[:15]
        return PackageManagerRun(path, pid, command), known
    return None, known


# installed package -> versions, and the packages dpkg left between states
Database = tuple[dict[str, tuple[str, ...]], tuple[Unsettled, ...]]


def _recalled(remembered: object) -> Database | None:
    if not isinstance(remembered, dict):
        return None
    versions, unsettled = remembered.get("versions"), remembered.get("unsettled")
    if not (isinstance(versions, dict) and all(
            isinstance(v, list) and all(isinstance(x, str) for x in v)
            for v in versions.values())):
        return None
    if not (isinstance(unsettled, list) and all(
            isinstance(u, list) and len(u) == 3 and all(isinstance(x, str) for x in u)
            and len(u[2].split()) == 3 for u in unsettled)):
        return None
    return ({str(name): tuple(v) for name, v in versions.items()},
            tuple(Unsettled(u[0], u[1], u[2]) for u in unsettled))


def installed_from_status(r: Reader, text: str, memo: CommandMemo | None) -> Database | None:
    """Installed package -> versions and the unsettled packages, from the status file's text;
    None (and an Unknown) when it does not parse. Parsing ~700 stanzas is the largest piece of
    an idle tick's own work, and the file changes only when packages do: the answer is
    remembered by its bytes."""
    # no memo (the console's first inspect after a boot): no key to hash the file for
    key = "" if memo is None else (
        f"{PARSE_VERSION}:{_sha256_hex(text.encode('utf-8', 'surrogateescape'))}")
    found, remembered = recall_document(memo, key)
    if found and isinstance(remembered, dict):
        problem = remembered.get("problem")
        if isinstance(problem, str):
            r.unknown(FIELD, DPKG_STATUS, problem)
            return None
        recalled = _recalled(remembered)
        if recalled is not None:
            return recalled
    try:
        stanzas = parse_dpkg_status(text)
    except ParseError as exc:
        remember_document(memo, key, {"problem": str(exc)})
        r.unknown(FIELD, DPKG_STATUS, str(exc))
        return None
    parsed, unsettled = installed_versions(stanzas), unsettled_packages(stanzas)
    remember_document(memo, key, {
        "versions": {k: list(v) for k, v in parsed.items()},
        "unsettled": [[u.package, u.architecture, u.status] for u in unsettled],
    })
    return parsed, unsettled


def _installed(
    r: Reader, package_names: Sequence[str], kernel_release: str | None,
    memo: CommandMemo | None,
) -> tuple[dict[str, str], tuple[Unsettled, ...]]:
    names = list(dict.fromkeys(package_names))
    if kernel_release is not None:
        names.append(f"linux-image-{kernel_release}")
    text = r.text(DPKG_STATUS, FIELD, max_bytes=DPKG_STATUS_MAX_BYTES)
    if text is None:
        return {}, ()
    database = installed_from_status(r, text, memo)
    if database is None:
        return {}, ()
    versions, unsettled = database
    installed: dict[str, str] = {}
    for name in names:
        found = versions.get(name, ())
        if len(found) == 1:
            installed[name] = found[0]
        elif found:
            r.unknown(f"packages.installed.{name}", DPKG_STATUS,
                      f"installed in several versions: {', '.join(found)}")
    return installed, unsettled


def _boot_kernels(r: Reader) -> tuple[str, ...]:
    names = r.list_dir("/boot", "packages.boot_kernels")
    if names is None:
        return ()
    present = set(names)
    releases = [name[len("vmlinuz-"):] for name in names if name.startswith("vmlinuz-")]
    return tuple(sorted(rel for rel in releases if rel and f"initrd.img-{rel}" in present))


def _sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
