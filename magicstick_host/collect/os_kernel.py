"""OS identity, architecture, kernel, boot ID, CPU and DMI."""

from __future__ import annotations

from magicstick_host.collect.reader import Reader
from magicstick_host.domain.evidence import KernelInfo, OsInfo
from magicstick_host.domain.parsers import ParseError
from magicstick_host.domain.parsers.identity import (
    parse_arch,
    parse_boot_id,
    parse_cpu_model,
    parse_dmi_line,
    parse_kernel_release,
)
from magicstick_host.domain.parsers.os_release import parse_os_release
from magicstick_host.domain.parsers.version_signature import parse_version_signature
from magicstick_host.ports.hostfs import HostReadError

OS_RELEASE = "/etc/os-release"
# os-release(5): the fallback when /etc/os-release is absent
OS_RELEASE_FALLBACK = "/usr/lib/os-release"
_OS_KEYS = {"id": "ID", "version_id": "VERSION_ID", "codename": "VERSION_CODENAME",
            "pretty_name": "PRETTY_NAME"}


def collect_os(r: Reader) -> OsInfo:
    path = OS_RELEASE
    if not r.exists(OS_RELEASE, "os", otherwise=True):
        path = OS_RELEASE_FALLBACK
    values = r.parsed(path, "os", parse_os_release)
    if values is None:
        return OsInfo()
    found: dict[str, str | None] = {}
    for attr, key in _OS_KEYS.items():
        value = values.get(key) or None
        if value is None:
            r.unknown(f"os.{attr}", path, f"no {key}")
        found[attr] = value
    return OsInfo(**found)


def collect_arch(r: Reader) -> str | None:
    path = "/proc/sys/kernel/arch"
    try:
        return parse_arch(r.fs.read_text(path))
    except (HostReadError, ParseError) as exc:
        # older kernels lack the sysctl; on the real root uname says the same thing
        if r.fs.is_real_root:
            return r.fs.machine()
        r.unknown("arch", path, exc.reason if isinstance(exc, HostReadError) else str(exc))
        return None


def collect_kernel(r: Reader) -> KernelInfo:
    release = r.parsed("/proc/sys/kernel/osrelease", "kernel.release", parse_kernel_release)
    path = "/proc/version_signature"
    signature = r.parsed(path, "kernel.package_version", parse_version_signature)
    if signature is None:
        return KernelInfo(release=release)
    if release is not None and signature.release != release:
        # a signature that does not describe the running kernel cannot give its package
        r.unknown("kernel.package_version", path,
                  f"describes {signature.release}, running {release}")
        return KernelInfo(release=release)
    return KernelInfo(
        release=release,
        package_version=signature.package_version,
        upstream_version=signature.upstream_version,
    )


def collect_boot_id(r: Reader) -> str | None:
    return r.parsed("/proc/sys/kernel/random/boot_id", "boot_id", parse_boot_id)


def collect_cpu_model(r: Reader) -> str | None:
    return r.parsed("/proc/cpuinfo", "cpu_model", parse_cpu_model)


def collect_dmi(r: Reader) -> tuple[str | None, str | None]:
    base = "/sys/class/dmi/id"
    vendor = r.parsed(f"{base}/sys_vendor", "dmi_vendor",
                      lambda t: parse_dmi_line(t, "sys_vendor"))
    product = r.parsed(f"{base}/product_name", "dmi_product",
                       lambda t: parse_dmi_line(t, "product_name"))
    return vendor, product
