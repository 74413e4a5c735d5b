"""The prepare playbook (`prepare.yml`) on a simulated host: install the approved packages.

Vars: `magicstick_profile_id`, `magicstick_os_version_id`, `magicstick_packages` {name: version},
`magicstick_target_kernel`. A kernel meta package (`linux-generic`, `linux-generic-hwe-24.04`)
at version `7.0.0-31.31[~24.04.N]` pulls in, as apt would, `linux-image-generic*` and
`linux-headers-generic*` at the same version and the image, modules and headers of the kernel
`7.0.0-31-generic` at its own ABI version; the image's postinst puts `/boot/vmlinuz-*` and
`/boot/initrd.img-*` in place and flags `/run/reboot-required`. The kernel's
/proc/version_signature is known from then on, for the boot.

As the real playbook, it enforces the package gate (`linux-generic` only on 26.04,
`linux-generic-hwe-24.04` only on 24.04, exact versions only) and apt's "no downgrade" rule.
Faults: see `sim/faults.py`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from magicstick_host.domain.versions import compare_versions
from magicstick_host.lite_dataclasses import dataclass, replace
from magicstick_host.sim import catalog
from magicstick_host.sim.ansible import PlayLog, banner, require
from magicstick_host.sim.builders import UBUNTU_KERNELS, ubuntu_kernel_signature
from magicstick_host.sim.faults import APT_CRASH_HALFWAY, APT_FAILS, PACKAGE_UNAVAILABLE
from magicstick_host.sim.model import Host, Package

if TYPE_CHECKING:
    from typing import Any

GATE = {"linux-generic": "26.04", "linux-generic-hwe-24.04": "24.04"}
META_RE = re.compile(r"^linux-generic(-hwe-\d\d\.\d\d)?$")
VERSION_RE = re.compile(r"^(\d+:)?[0-9][A-Za-z0-9.+~]*(-[A-Za-z0-9.+~]+)?$")
INSTALL_TASK = "Install the approved kernel packages"
HALF = "install ok half-configured"


@dataclass(frozen=True)
class Outcome:
    log: PlayLog
    faults_fired: tuple[str, ...] = ()
    crashed: bool = False


def os_version(host: Host) -> str:
    return host.os_release.get("VERSION_ID", "").strip('"')


def kernel_of(meta_version: str) -> str | None:
    """`7.0.0-31.31~24.04.1` -> `7.0.0-31-generic` (the kernel a generic meta version pulls)."""
    m = re.match(r"^(\d+\.\d+\.\d+)-(\d+)\.", meta_version)
    return f"{m[1]}-{m[2]}-generic" if m else None


def image_version(os_ver: str, release: str, meta_version: str) -> str:
    known = UBUNTU_KERNELS.get((os_ver, release))
    return known[1] if known else meta_version


def signature(os_ver: str, release: str, image_ver: str) -> str:
    known = ubuntu_kernel_signature(os_ver, release)
    upstream = ".".join(release.split("-")[0].split(".")[:2]) + ".0"
    return known or f"Ubuntu {image_ver}-generic {upstream}"


def run_prepare(host: Host, variables: dict[str, Any],
                lock_holder: tuple[str, int] | None = None) -> Outcome:
    """Change `host` as the playbook would; the caller writes it and records the run.
    `lock_holder`: (lock, pid) of another process holding a dpkg lock of the simulated root
    for real, as apt finds it: its install then fails after the lock timeout, as apt's does."""
    log = PlayLog("Prepare the Strix Halo host for its reviewed GPU profile")
    packages: dict[str, Any] = require(variables, "magicstick_packages", dict)
    target: str = require(variables, "magicstick_target_kernel", str)
    wanted_os: str = require(variables, "magicstick_os_version_id", str)
    profile: str = require(variables, "magicstick_profile_id", str)
    log.task("Gathering Facts", "ok")
    problems = _gate(host, packages, wanted_os)
    if problems:
        log.task("Check the package gate", "failed",
                 {"assertion": problems[0], "evaluated_to": False, "msg": "; ".join(problems)})
        return Outcome(log)
    log.task("Check the package gate", "ok", {"changed": False, "msg": "All assertions passed"})
    log.task("Refresh the APT cache from the signed repositories", "ok")
    pins = {str(n): str(v) for n, v in packages.items()}
    fired: list[str] = []
    failure = _locked(lock_holder, pins) or _apt_failure(host, pins, fired)
    if failure is not None:
        log.task(INSTALL_TASK, "failed", failure)
        return Outcome(log, tuple(fired))
    wanted = _expand(host, pins)
    changed = [p for p in wanted if _differs(host.package(p.name), p)]
    if APT_CRASH_HALFWAY in host.faults and changed:
        host.faults.remove(APT_CRASH_HALFWAY)
        fired.append(APT_CRASH_HALFWAY)
        _install(host, [p for p in changed if not META_RE.match(p.name)
                        and not p.name.startswith(("linux-image-generic", "linux-headers-gen"))])
        for name in pins:
            if (old := host.package(name)) is not None:
                old.status = HALF
        log.lines.append(banner(f"TASK [{INSTALL_TASK}]"))
        return Outcome(log, tuple(fired), crashed=True)
    _install(host, changed)
    log.task(INSTALL_TASK, "changed" if changed else "ok",
             {"changed": bool(changed), "profile": profile,
              "installed": [f"{p.name}={p.version}" for p in changed]} if changed else None)
    if target not in host.boot_kernels:
        log.task("Check that the target kernel is in /boot", "failed",
                 {"msg": f"/boot/vmlinuz-{target} or /boot/initrd.img-{target} is missing"})
        return Outcome(log, tuple(fired))
    log.task("Check that the target kernel is in /boot", "ok")
    log.task("Report whether a reboot is required", "ok",
             {"msg": "reboot required" if host.reboot_required_pkgs else "no reboot required"})
    return Outcome(log, tuple(fired))


def _gate(host: Host, packages: dict[str, Any], wanted_os: str) -> list[str]:
    problems: list[str] = []
    here = os_version(host)
    if host.os_release.get("ID") != "ubuntu" or wanted_os != here:
        problems.append(f"the profile is for Ubuntu {wanted_os}, this host runs "
                        f"{host.os_release.get('ID', '?')} {here}")
    if not packages:
        problems.append("magicstick_packages is empty")
    for name, version in packages.items():
        if not isinstance(version, str) or not VERSION_RE.match(version):
            problems.append(f"{name}: {version!r} is not an exact version")
        elif name in GATE and GATE[name] != here:
            problems.append(f"{name} is allowed only on Ubuntu {GATE[name]}")
    return problems


def _locked(holder: tuple[str, int] | None, pins: dict[str, str]) -> dict[str, Any] | None:
    """apt's answer when another process keeps dpkg's lock past its lock timeout; nothing is
    installed."""
    if holder is None:
        return None
    lock, pid = holder
    err = (f"E: Could not get lock {lock}. It is held by process {pid}\n"
           f"E: Unable to acquire the dpkg frontend lock ({lock}), is another process using "
           "it?\n")
    return {"msg": f"Failed to lock apt for exclusive operation: {err.splitlines()[0]}",
            "rc": 100, "stderr": err, "stdout": "",
            "wanted": [f"{n}={v}" for n, v in pins.items()]}


def _apt_failure(host: Host, pins: dict[str, str], fired: list[str]) -> dict[str, Any] | None:
    apt = "/usr/bin/apt-get -y -o \"Dpkg::Options::=--force-confdef\" -o " \
          "\"Dpkg::Options::=--force-confold\" --no-remove install " + \
          " ".join(f"'{n}={v}'" for n, v in pins.items())
    if PACKAGE_UNAVAILABLE in host.faults:
        host.faults.remove(PACKAGE_UNAVAILABLE)
        fired.append(PACKAGE_UNAVAILABLE)
        name = next((n for n in pins if META_RE.match(n)), next(iter(pins)))
        err = f"E: Version '{pins[name]}' for '{name}' was not found\n"
        return {"msg": f"'{apt}' failed: {err}", "rc": 100, "stderr": err, "stdout": ""}
    for name, version in pins.items():
        old = host.package(name)
        if old is not None and compare_versions(old.version, version) > 0:
            err = "E: Packages were downgraded and -y was used without --allow-downgrades.\n"
            return {"msg": f"'{apt}' failed: {err}", "rc": 100, "stderr": err,
                    "stdout": f"The following packages will be DOWNGRADED:\n  {name}\n"}
    if APT_FAILS in host.faults:
        host.faults.remove(APT_FAILS)
        fired.append(APT_FAILS)
        err = "E: Sub-process /usr/bin/dpkg returned an error code (1)"
        return {"msg": err, "rc": 100, "stderr": err + "\n",
                "stdout": "Setting up linux-image-generic ...\ndpkg: error processing package "
                          "linux-generic (--configure):\n dependency problems - leaving "
                          "unconfigured\nErrors were encountered while processing:\n"}
    return None


def _expand(host: Host, pins: dict[str, str]) -> list[Package]:
    """What apt installs for the pins: the pinned packages and the kernel they pull in."""
    os_ver = os_version(host)
    out: dict[str, Package] = {}
    for name, version in pins.items():
        release = kernel_of(version) if META_RE.match(name) else None
        if release is None:
            old = host.package(name)
            out[name] = replace(old, version=version, status="install ok installed") \
                if old else Package(name, version)
            continue
        image_ver = image_version(os_ver, release, version)
        for pkg in catalog.kernel_packages(release, image_ver, name, version,
                                           signed_source=catalog.signed_source(name, release)):
            out[pkg.name] = pkg
    return list(out.values())


def _differs(old: Package | None, new: Package) -> bool:
    return old is None or old.version != new.version or old.status != new.status


def _install(host: Host, packages: list[Package]) -> None:
    os_ver = os_version(host)
    by_name = {p.name: p for p in host.packages}
    for pkg in packages:
        by_name[pkg.name] = pkg
        m = re.fullmatch(r"linux-image-(\d+\.\d+\.\d+-\d+-generic)", pkg.name)
        if m is None:
            continue
        release = m[1]
        if release not in host.boot_kernels:
            host.boot_kernels.append(release)
        host.kernel_signatures[release] = signature(os_ver, release, pkg.version)
        pending = host.reboot_required_pkgs or []
        if pkg.name not in pending:
            host.reboot_required_pkgs = [*pending, pkg.name]
    host.packages = sorted(by_name.values(), key=lambda p: p.name)
