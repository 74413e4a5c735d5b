"""How the GPU drivers come up after a simulated boot, and the helpers that finish it later.

amdgpu on the Strix Halo (`Host.driver_after_boot`):
- `ready`: on a kernel with the gfx1151 fixes (upstream >= 6.18.4 by the numbers of `uname -r`,
  or Ubuntu OEM `6.14.0-N-oem` with N >= 1018) amdgpu is bound, with a DRM card, renderD128, a
  KFD node (`gfx_target_version 110501`, `drm_render_minor 128`) and /dev/kfd. On an older
  kernel the driver is left as it was.
- `late`: after the boot amdgpu is not bound yet (no DRM nodes, no KFD GPU node, no /dev/kfd)
  until `driver_comes_up(root)`.
- `never`: amdgpu keeps its binding, but KFD never comes up: no gfx1151 KFD node, no /dev/kfd
  (the failing driver of the `...-driver-failing` scenario). `driver_comes_up` refuses.

The NVIDIA driver of NVIDIA display devices (`Host.companion_after_boot`):
- `ready`: bound to `nvidia` with its modules; `nvidia-persistenced`, if the host has that unit
  and it was `activating` or `failed` (waiting for the driver), becomes `active`.
- `late`: unbound and the nvidia modules not loaded; the unit is `activating` until
  `companion_binds(root)` binds the devices and makes it `active`.
- `never`: unbound, the unit `failed`.
- `vfio-pci` / `nouveau`: bound to that driver instead (a passthrough or a distribution default
  that took the GPU); the nvidia modules are not loaded and the unit is `failed`.
The persistenced socket follows the unit: present exactly when it is `active`.
"""

from __future__ import annotations

import re
from pathlib import Path

from magicstick_host.sim import catalog
from magicstick_host.sim.builders import kfd_cpu_node, kfd_gpu_node
from magicstick_host.sim.model import COMPANION_AFTER_BOOT, Host, PciDevice

PERSISTENCED = "nvidia-persistenced"
STRIX_CONNECTORS = ["DP-1", "DP-2", "HDMI-A-1"]


def has_gfx1151_fixes(release: str) -> bool:
    oem = re.fullmatch(r"6\.14\.0-(\d+)-oem", release)
    if oem:
        return int(oem[1]) >= 1018
    numbers = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", release)
    if numbers is None:
        return False
    upstream = (int(numbers[1]), int(numbers[2]), int(numbers[3] or 0))
    return upstream >= (6, 18, 4)


def strix_devices(host: Host) -> list[PciDevice]:
    return [d for d in host.pci if (d.vendor, d.device) == ("1002", "1586")]


def nvidia_displays(host: Host) -> list[PciDevice]:
    return [d for d in host.pci if d.vendor == "10de" and d.pci_class.startswith("03")]


def _free(host: Host, prefix: str, start: int) -> str:
    used = {n for d in host.pci for n in d.cards + d.renders}
    n = start
    while f"{prefix}{n}" in used:
        n += 1
    return f"{prefix}{n}"


def _bind(host: Host, dev: PciDevice, driver: str, connectors: list[str]) -> None:
    dev.driver = driver
    if not dev.cards:
        dev.cards = [_free(host, "card", 1)]
        dev.connectors = dev.connectors or list(connectors)
    if not dev.renders:
        dev.renders = [_free(host, "renderD", 128)]


def _unbind(dev: PciDevice) -> None:
    dev.driver, dev.cards, dev.renders, dev.connectors = None, [], [], []


def _is_strix_node(props: dict[str, int]) -> bool:
    return props.get("vendor_id") == 0x1002 and props.get("device_id") == 0x1586


def _drop_strix_kfd(host: Host) -> None:
    nodes = [n for n in host.kfd_nodes if not _is_strix_node(n.properties)]
    gpus = [n for n in nodes if n.properties.get("gfx_target_version", 0)]
    host.kfd_nodes = nodes if gpus else []
    host.dev_kfd = bool(gpus)


def amd_ready(host: Host) -> None:
    """amdgpu bound to every Strix Halo, with DRM nodes, a KFD gfx1151 node and /dev/kfd."""
    devices = strix_devices(host)
    if not devices:
        return
    if host.module("amdgpu") is None:
        host.modules += catalog.amdgpu_modules()
    if not any(n.node_id == 0 for n in host.kfd_nodes):
        host.kfd_nodes.insert(0, kfd_cpu_node(host.cpu))
    for dev in devices:
        _bind(host, dev, "amdgpu", STRIX_CONNECTORS)
        render = int(dev.renders[0].removeprefix("renderD"))
        host.kfd_nodes = [n for n in host.kfd_nodes if not (
            _is_strix_node(n.properties) and n.properties.get("drm_render_minor") == render)]
        used = {n.node_id for n in host.kfd_nodes}
        node_id = next(i for i in range(1, len(used) + 2) if i not in used)
        host.kfd_nodes.append(kfd_gpu_node(node_id, gfx=110501, device_id="1586",
                                           location=dev.address, render=render, cus=40))
    host.kfd_nodes.sort(key=lambda n: n.node_id)
    host.dev_kfd = True


def amd_after_boot(host: Host) -> None:
    mode = host.driver_after_boot
    if mode == "ready":
        if has_gfx1151_fixes(host.kernel.release):
            amd_ready(host)
    elif mode == "late":
        for dev in strix_devices(host):
            _unbind(dev)
        _drop_strix_kfd(host)
    elif mode == "never":
        _drop_strix_kfd(host)
    else:
        raise ValueError(f"driver_after_boot {mode!r}: use ready, late or never")


def companion_ready(host: Host) -> None:
    devices = nvidia_displays(host)
    if not devices:
        return
    if host.module("nvidia") is None:
        host.modules += catalog.nvidia_modules()
    for dev in devices:
        _bind(host, dev, "nvidia", [])
    if host.units.get(PERSISTENCED) in ("activating", "failed"):
        host.units[PERSISTENCED] = "active"


def companion_after_boot(host: Host) -> None:
    mode = host.companion_after_boot
    if mode == "ready":
        companion_ready(host)
        return
    if mode not in COMPANION_AFTER_BOOT:
        raise ValueError(
            f"companion_after_boot {mode!r}: use {', '.join(COMPANION_AFTER_BOOT)}"
        )
    devices = nvidia_displays(host)
    if not devices:
        return
    for dev in devices:
        _unbind(dev)
        if mode in ("vfio-pci", "nouveau"):
            _bind(host, dev, mode, [])
    host.modules = [m for m in host.modules if not m.name.startswith("nvidia")]
    if PERSISTENCED in host.units:
        host.units[PERSISTENCED] = "activating" if mode == "late" else "failed"


def driver_comes_up(root: Path) -> None:
    """amdgpu finishes coming up on the simulated host at `root` (after a `late` boot)."""
    from magicstick_host.sim.writer import load_host, write_host

    host = load_host(root)
    if host.driver_after_boot == "never":
        raise ValueError("driver_after_boot is 'never': the driver does not come up")
    amd_ready(host)
    write_host(host, root)


def companion_binds(root: Path) -> None:
    """The NVIDIA driver binds its devices on the simulated host at `root` (after `late`)."""
    from magicstick_host.sim.writer import load_host, write_host

    host = load_host(root)
    if host.companion_after_boot == "never":
        raise ValueError("companion_after_boot is 'never': the NVIDIA driver does not bind")
    companion_ready(host)
    host.nvidia_persistenced_socket = host.units.get(PERSISTENCED) == "active"
    write_host(host, root)
