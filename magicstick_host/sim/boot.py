"""`sim boot`: the simulated host starts again (after its scheduled shutdown, or a power loss).

A boot gives a new boot ID, clears what lives in /run (tmpfs), boots the newest installed kernel,
and activates what only takes effect at boot: the selected firmware carve-out.
"""

from __future__ import annotations

from pathlib import Path

from magicstick_host.sim.model import default_boot_id
from magicstick_host.sim.writer import load_host, write_host


def boot_host(root: Path) -> str:
    """Boot the simulated host at `root`; returns the new boot ID."""
    host = load_host(root)
    host.boot_count += 1
    host.boot_id = default_boot_id(host.scenario, host.boot_count)
    # /run is a tmpfs: nothing scheduled or pending survives a boot
    host.shutdown = None
    host.reboot_required_pkgs = None
    host.nvidia_persistenced_socket = host.units.get("nvidia-persistenced") == "active"
    newest = host.newest_boot_kernel()
    if newest is not None:
        host.boot_into(newest)
    for dev in host.pci:
        if dev.integrated and dev.uma is not None and dev.vram_mib is not None:
            dev.vram_mib = dev.uma.size_of(dev.uma.selected) or dev.vram_mib
    write_host(host, root)
    return host.boot_id
