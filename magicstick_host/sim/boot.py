"""The simulated host starts again (after its scheduled shutdown, or a power loss). `sim boot`
runs this, then what systemd does at boot on a host with a network (sim/systemd.py).

A boot is a function of the tree and host.json only. It gives a new boot ID and:
- empties /run (a tmpfs), whoever put files there: the scheduled shutdown,
  /run/reboot-required(.pkgs), /run/modprobe.d, cloud-init's status; the nvidia-persistenced
  socket is there again exactly when the unit is active;
- boots the newest kernel in /boot, with its /proc/version_signature;
- activates the firmware carve-out selected in `uma/carveout`: `mem_info_vram_total` becomes the
  option's size and MemTotal shrinks or grows by the difference (the model derives it);
- loads ttm and amdgpu with the options of the modprobe.d files and /proc/cmdline
  (`sim/modprobe.py`): the last `options ttm pages_limit=N page_pool_size=M` wins; without one,
  the kernel default (half of MemTotal) applies;
- brings the drivers up as `driver_after_boot` / `companion_after_boot` say (`sim/drivers.py`;
  `driver_comes_up(root)` and `companion_binds(root)`, re-exported here, finish a `late` one);
- runs cloud-init again: a fresh result for this boot (`done`, or `error` again if it failed).
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from magicstick_host.sim import catalog
from magicstick_host.sim.drivers import (
    PERSISTENCED,
    amd_after_boot,
    companion_after_boot,
    companion_binds,
    driver_comes_up,
)
from magicstick_host.sim.model import TTM_MODULES, Host, Module, boot_id_namespace
from magicstick_host.sim.modprobe import module_options
from magicstick_host.sim.writer import load_host, write_host

__all__ = ["boot_host", "companion_binds", "driver_comes_up"]
TTM_PARAMS = ("pages_limit", "page_pool_size")


def boot_host(root: Path) -> str:
    """Boot the simulated host at `root`; returns the new boot ID."""
    host = load_host(root)
    _clear_run(Path(root))
    host.boot_count += 1
    # derived from the previous boot, so two hosts of one scenario never share a boot ID,
    # while a given host still boots deterministically (stable golden output)
    host.boot_id = str(uuid.uuid5(boot_id_namespace(), f"{host.boot_id}#{host.boot_count}"))
    host.shutdown = None
    host.reboot_required_pkgs = None
    host.modprobe_files = {p: t for p, t in host.modprobe_files.items()
                           if not p.startswith("run/")}
    newest = host.newest_boot_kernel()
    if newest is not None:
        host.boot_into(newest)
    for dev in host.pci:
        if dev.integrated and dev.uma is not None and dev.vram_mib is not None:
            dev.vram_mib = dev.uma.size_of(dev.uma.selected) or dev.vram_mib
    apply_module_options(host)
    amd_after_boot(host)
    companion_after_boot(host)
    host.nvidia_persistenced_socket = host.units.get(PERSISTENCED) == "active"
    ci = host.cloud_init
    if ci.installed:
        ci.state = "error" if ci.state == "error" else "done"
        ci.boot_finished = True
    write_host(host, root)
    return host.boot_id


def _clear_run(root: Path) -> None:
    """/run is a tmpfs: everything in it is gone, whoever made it (write_host renders what
    the new boot has there again)."""
    run = root / "run"
    if run.is_symlink() or not run.is_dir():
        return
    for item in run.iterdir():
        if item.is_dir() and not item.is_symlink():
            shutil.rmtree(item)
        else:
            item.unlink()


def _cmdline(host: Host) -> str:
    return f"BOOT_IMAGE=/boot/vmlinuz-{host.kernel.release} {host.cmdline_args}"


def ttm_module(host: Host) -> Module | None:
    """The ttm module amdgpu uses (its holders name amdgpu), else any loaded ttm module."""
    mods = [m for m in host.modules if m.name in TTM_MODULES]
    return next((m for m in mods if "amdgpu" in m.holders), mods[0] if mods else None)


def apply_module_options(host: Host) -> None:
    """ttm and amdgpu parameters as loading them at this boot sets them."""
    ttm = ttm_module(host)
    if ttm is not None:
        options = module_options(host.modprobe_files, _cmdline(host), ttm.name)
        for key in TTM_PARAMS:
            ttm.parameters.pop(key, None)  # absent: the kernel default (half of MemTotal)
        for key, value in options.items():
            if key not in TTM_PARAMS or value.isdigit():  # a bad number is rejected
                ttm.parameters[key] = value
    amdgpu = host.module("amdgpu")
    if amdgpu is not None:
        defaults = catalog.amdgpu_modules()[0].parameters
        options = module_options(host.modprobe_files, _cmdline(host), "amdgpu")
        amdgpu.parameters = {**amdgpu.parameters, **defaults, **options}
