"""A tiny builder of fake host roots, laid out exactly as docs/host-root-layout.md says.

Deliberately local: the full scenario generator lives in magicstick_host/sim/.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

STRIX_ADDR = "0000:c5:00.0"
CARVEOUT_OPTIONS = "0: Minimum (512 MB)\n1:  (1 GB)\n7: Medium (16 GB)\n9: High (32 GB)\n"
BOOT_ID = "6f1c3b2a-0d4e-4b8a-9c7d-1e2f3a4b5c6d"


class FakeHost:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, host_path: str) -> Path:
        return self.root / host_path.lstrip("/")

    def file(self, host_path: str, text: str | bytes = "") -> FakeHost:
        target = self.path(host_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            target.write_bytes(text)
        else:
            target.write_text(text)
        return self

    def socket(self, host_path: str) -> FakeHost:
        """A socket inode, as nvidia-persistenced leaves at /run/nvidia-persistenced/socket."""
        target = self.path(host_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.mknod(target, stat.S_IFSOCK | 0o755)
        return self

    def dir(self, host_path: str) -> FakeHost:
        self.path(host_path).mkdir(parents=True, exist_ok=True)
        return self

    def link(self, host_path: str, target: str) -> FakeHost:
        where = self.path(host_path)
        where.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, where)
        return self

    def remove(self, host_path: str) -> FakeHost:
        self.path(host_path).unlink()
        return self

    def pci(
        self,
        addr: str,
        vendor: str | None,
        device: str | None,
        cls: str | None,
        *,
        driver: str | None = None,
        revision: str = "c1",
        drm: tuple[str, ...] = (),
    ) -> str:
        """Create a PCI device; None leaves a mandatory attribute out. Returns its sysfs dir."""
        real = f"/sys/devices/pci0000:00/{addr}"
        self.dir(real)
        self.link(f"/sys/bus/pci/devices/{addr}", f"../../../devices/pci0000:00/{addr}")
        for name, value in (("vendor", vendor), ("device", device)):
            if value is not None:
                self.file(f"{real}/{name}", f"0x{value}\n")
        if cls is not None:
            self.file(f"{real}/class", f"0x{cls}\n")
        self.file(f"{real}/revision", f"0x{revision}\n")
        self.file(f"{real}/subsystem_vendor", "0x1002\n")
        self.file(f"{real}/subsystem_device", "0x0123\n")
        if driver is not None:
            self.dir(f"/sys/bus/pci/drivers/{driver}")
            self.link(f"{real}/driver", f"../../../bus/pci/drivers/{driver}")
        for name in drm:
            self.dir(f"{real}/drm/{name}")
        return real


def ready_strix_halo(root: Path) -> FakeHost:
    """Strix Halo on Ubuntu 26.04, kernel 7.0.0-31-generic, amdgpu bound and ready."""
    h = FakeHost(root)
    h.file("/etc/os-release", 'PRETTY_NAME="Ubuntu Resolute Raccoon"\nNAME="Ubuntu"\n'
           'VERSION_ID="26.04"\nVERSION_CODENAME=resolute\nID=ubuntu\n')
    h.file("/proc/sys/kernel/osrelease", "7.0.0-31-generic\n")
    h.file("/proc/sys/kernel/arch", "x86_64\n")
    h.file("/proc/sys/kernel/random/boot_id", BOOT_ID + "\n")
    h.file("/proc/version_signature", "Ubuntu 7.0.0-31.31-generic 7.0.4\n")
    h.file("/proc/meminfo", "MemTotal:       131023872 kB\nMemFree:        120000000 kB\n")
    h.file("/proc/cmdline", "BOOT_IMAGE=/vmlinuz-7.0.0-31-generic root=UUID=abc ro quiet\n")
    h.file("/proc/cpuinfo", "processor\t: 0\nmodel name\t: AMD RYZEN AI MAX+ 395 w/ Radeon 8060S\n")
    h.file("/proc/self/cgroup", "0::/system.slice/magicstick-host-management.service\n")
    h.file("/sys/fs/cgroup/system.slice/memory.max", "max\n")
    h.file("/sys/fs/cgroup/system.slice/magicstick-host-management.service/memory.max",
           "1073741824\n")
    h.file("/sys/class/dmi/id/sys_vendor", "Framework\n")
    h.file("/sys/class/dmi/id/product_name", "Desktop (AMD Ryzen AI Max 300 Series)\n")
    real = h.pci(STRIX_ADDR, "1002", "1586", "038000", driver="amdgpu",
                 drm=("card1", "renderD128", "card1-DP-1"))
    h.file(f"{real}/uma/carveout_options", CARVEOUT_OPTIONS)
    h.file(f"{real}/uma/carveout", "7\n")
    h.file(f"{real}/mem_info_vram_total", str(512 * 1024 * 1024) + "\n")
    h.file(f"{real}/mem_info_gtt_total", str(64 * 1024**3) + "\n")
    h.pci("0000:c5:00.1", "1002", "1640", "040300", driver="snd_hda_intel")
    h.pci("0000:00:00.0", "1022", "14e8", "060000")
    nodes = "/sys/class/kfd/kfd/topology/nodes"
    h.file(f"{nodes}/0/properties", "cpu_cores_count 32\ngfx_target_version 0\n"
           "drm_render_minor 0\n")
    h.file(f"{nodes}/1/properties", "simd_count 80\ngfx_target_version 110501\n"
           "drm_render_minor 128\n")
    h.file("/dev/kfd")
    h.file("/dev/dri/renderD128")
    h.file("/sys/module/amdgpu/parameters/gttsize", "-1\n")
    h.link("/sys/module/ttm/holders/amdgpu", "../../amdgpu")
    h.file("/sys/module/ttm/parameters/pages_limit", "16777216\n")
    h.file("/sys/module/ttm/parameters/page_pool_size", "16777216\n")
    h.file("/etc/modprobe.d/90-magicstick-ttm.conf",
           "# managed by magicstick-host\noptions ttm pages_limit=16777216 "
           "page_pool_size=16777216\n")
    h.file("/etc/modprobe.d/blacklist.conf", "blacklist nouveau\n")
    h.file("/etc/default/grub", 'GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT="quiet splash"\n'
           'GRUB_CMDLINE_LINUX=""\n')
    h.file("/var/lib/dpkg/status",
           "Package: linux-generic\nStatus: install ok installed\nVersion: 7.0.0-31.31\n\n"
           "Package: linux-image-7.0.0-31-generic\nStatus: install ok installed\n"
           "Version: 7.0.0-31.31\nDescription: kernel\n long text\n")
    h.file("/boot/vmlinuz-7.0.0-31-generic")
    h.file("/boot/initrd.img-7.0.0-31-generic")
    h.file("/boot/vmlinuz-6.8.0-45-generic")  # no initrd: not bootable
    h.link("/boot/vmlinuz", "vmlinuz-7.0.0-31-generic")
    h.file("/usr/bin/cloud-init")
    h.file("/run/cloud-init/result.json", '{"v1": {"datasource": "x", "errors": []}}')
    return h
