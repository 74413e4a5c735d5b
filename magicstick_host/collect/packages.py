"""Installed package versions (dpkg status) and the kernels /boot can boot."""

from __future__ import annotations

from collections.abc import Sequence

from magicstick_host.collect.reader import Reader
from magicstick_host.domain.evidence import PackageInfo
from magicstick_host.domain.parsers.dpkg_status import installed_versions, parse_dpkg_status
from magicstick_host.ports.hostfs import DPKG_STATUS_MAX_BYTES

DPKG_STATUS = "/var/lib/dpkg/status"


def collect_packages(
    r: Reader, package_names: Sequence[str], kernel_release: str | None
) -> PackageInfo:
    return PackageInfo(
        installed=_installed(r, package_names, kernel_release),
        boot_kernels=_boot_kernels(r),
    )


def _installed(
    r: Reader, package_names: Sequence[str], kernel_release: str | None
) -> dict[str, str]:
    names = list(dict.fromkeys(package_names))
    if kernel_release is not None:
        names.append(f"linux-image-{kernel_release}")
    stanzas = r.parsed(DPKG_STATUS, "packages.installed", parse_dpkg_status,
                       max_bytes=DPKG_STATUS_MAX_BYTES)
    if stanzas is None:
        return {}
    versions = installed_versions(stanzas)
    installed: dict[str, str] = {}
    for name in names:
        found = versions.get(name, ())
        if len(found) == 1:
            installed[name] = found[0]
        elif found:
            r.unknown(f"packages.installed.{name}", DPKG_STATUS,
                      f"installed in several versions: {', '.join(found)}")
    return installed


def _boot_kernels(r: Reader) -> tuple[str, ...]:
    names = r.list_dir("/boot", "packages.boot_kernels")
    if names is None:
        return ()
    present = set(names)
    releases = [name[len("vmlinuz-"):] for name in names if name.startswith("vmlinuz-")]
    return tuple(sorted(rel for rel in releases if rel and f"initrd.img-{rel}" in present))
