"""The NVIDIA driver version and nvidia-persistenced (container start needs both the daemon
and its socket)."""

from __future__ import annotations

from magicstick_host.collect.reader import Reader
from magicstick_host.domain.convergence.display import nvidia_display_gpus
from magicstick_host.domain.evidence import NVIDIA_VENDOR, NvidiaInfo, PciInventory
from magicstick_host.domain.parsers.identity import parse_nvidia_module_version, parse_nvrm_version
from magicstick_host.ports.runner import NOT_FOUND, OUTPUT_TOO_LARGE, TIMED_OUT, CommandRunner

MODULE_VERSION = "/sys/module/nvidia/version"
PROC_VERSION = "/proc/driver/nvidia/version"
PERSISTENCED_SOCKET = "/run/nvidia-persistenced/socket"
SYSTEMCTL_TIMEOUT_S = 5


def collect_nvidia(r: Reader, runner: CommandRunner, pci: PciInventory) -> NvidiaInfo:
    nvidia_devices = [d for d in pci.devices if d.vendor == NVIDIA_VENDOR]
    # `test -S`: the CDI specs bind-mount a socket; a plain file there is no daemon
    kind = r.path_kind(PERSISTENCED_SOCKET, "nvidia.persistenced_socket") or "unknown"
    return NvidiaInfo(
        driver_version=_driver_version(r, any(d.driver == "nvidia" for d in nvidia_devices)),
        # the display driver's daemon: a 3D controller's is the GPU Operator's (convergence.md)
        persistenced_active=_persistenced_active(r, runner) if nvidia_display_gpus(pci) else None,
        persistenced_socket=kind == "socket",
        persistenced_socket_kind=kind,
    )


def _driver_version(r: Reader, bound: bool) -> str | None:
    field = "nvidia.driver_version"
    version = r.parsed(MODULE_VERSION, field, parse_nvidia_module_version, optional=True)
    if version is not None or r.exists(MODULE_VERSION, field, otherwise=True):
        return version
    version = r.parsed(PROC_VERSION, field, parse_nvrm_version, optional=True)
    if version is None and bound and not r.exists(PROC_VERSION, field, otherwise=True):
        # a device bound to nvidia without a module version is a contradiction
        r.unknown(field, MODULE_VERSION, "missing although a device is bound to nvidia")
    return version


def _persistenced_active(r: Reader, runner: CommandRunner) -> bool | None:
    argv = ["systemctl", "is-active", "nvidia-persistenced"]
    field = "nvidia.persistenced_active"
    try:
        result = runner.run(argv, timeout=SYSTEMCTL_TIMEOUT_S)
    except OSError as exc:
        r.unknown(field, "systemctl is-active nvidia-persistenced", str(exc) or "failed")
        return None
    if result.returncode in (NOT_FOUND, TIMED_OUT, OUTPUT_TOO_LARGE):
        reason = {NOT_FOUND: "systemctl not found", TIMED_OUT: "timed out"}.get(
            result.returncode, "too much output")
        r.unknown(field, "systemctl is-active nvidia-persistenced", reason)
        return None
    return result.returncode == 0
