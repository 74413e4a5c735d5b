"""The declarative model of a simulated host.

Everything here is plain, mutable data: a scenario builds a `Host`, the renderer turns it into a
fake host root (`render.py`), and later host-simulator effects load it back (`writer.load_host`),
change it (install a kernel, boot, activate a carve-out) and write it again (`writer.write_host`).

Derived facts are not stored, so an edit cannot leave them inconsistent:
- MemTotal = physical RAM - the active carve-out of integrated GPUs - `MEM_OVERHEAD_KIB`;
- the TTM `pages_limit`/`page_pool_size` default to half of MemTotal in 4 KiB pages when the
  model leaves them unset;
- `/proc/cmdline` is built from the running kernel and `cmdline_args`;
- `/dev/dri/*`, `/dev/nvidia*` and `/sys/class/drm/*` follow the devices' DRM children.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

from magicstick_host.lite_dataclasses import dataclass, field
from magicstick_host.sim.network_model import SimNetwork

if TYPE_CHECKING:
    import uuid

# memory the firmware and the kernel keep besides the carve-out: 128 GiB of RAM with a 512 MiB
# carve-out shows MemTotal 131023872 kB (about 125 GiB), as in docs/host-root-layout.md
MEM_OVERHEAD_KIB = 2_669_568
TTM_MODULES = ("ttm", "amdttm", "amd_ttm")
COMPANION_AFTER_BOOT = ("ready", "late", "never", "vfio-pci", "nouveau")
CGROUP_SERVICE = "/system.slice/magicstick-host-management.service"


@cache
def boot_id_namespace() -> uuid.UUID:
    """The namespace of the deterministic boot IDs. The uuid module (with the platform module
    it imports, about 2 ms) loads only when an ID is made: the simulated tick makes none."""
    import uuid

    return uuid.uuid5(uuid.NAMESPACE_URL, "https://magicstick.invalid/sim/boot-id")


def default_boot_id(scenario: str, boot_count: int = 0) -> str:
    """uuid5 of the scenario name (boot 0), or of `name#N` for the N-th simulated reboot."""
    import uuid

    name = scenario if boot_count == 0 else f"{scenario}#{boot_count}"
    return str(uuid.uuid5(boot_id_namespace(), name))


def kernel_sort_key(release: str) -> tuple[int, ...]:
    """Numeric order of kernel releases: `7.0.0-31-generic` > `6.17.0-14-generic`."""
    return tuple(int(n) for n in re.findall(r"\d+", release))


@dataclass
class Package:
    """One dpkg status stanza."""

    name: str
    version: str
    section: str = "misc"
    description: str = ""
    architecture: str = "amd64"
    status: str = "install ok installed"
    priority: str = "optional"
    installed_size: int = 64
    source: str | None = None
    depends: str | None = None
    multi_arch: str | None = None
    essential: bool = False
    maintainer: str = "Ubuntu Developers <ubuntu-devel-discuss@lists.ubuntu.com>"


@dataclass
class Kernel:
    release: str  # uname -r
    version_signature: str | None = None  # /proc/version_signature, Ubuntu only
    arch: str = "x86_64"


@dataclass
class UmaOption:
    index: int
    name: str  # may be empty: renders as `1:  (1 GB)`
    size_mib: int


@dataclass
class Uma:
    """The firmware carve-out control (`uma/carveout_options`, `uma/carveout`)."""

    options: list[UmaOption]
    selected: int  # the index `uma/carveout` reads back: the choice for the next boot

    def size_of(self, index: int) -> int | None:
        return next((o.size_mib for o in self.options if o.index == index), None)


@dataclass
class PciDevice:
    address: str  # 0000:c5:00.0
    vendor: str  # 4 lowercase hex digits, no 0x
    device: str
    pci_class: str  # 6 lowercase hex digits
    revision: str = "00"
    subsystem_vendor: str = "0000"
    subsystem_device: str = "0000"
    driver: str | None = None  # None: unbound (no `driver` link)
    cards: list[str] = field(default_factory=list)  # DRM children, e.g. ["card1"]
    renders: list[str] = field(default_factory=list)  # e.g. ["renderD128"]
    connectors: list[str] = field(default_factory=list)  # e.g. ["DP-1"] -> card1-DP-1
    uma: Uma | None = None
    # mem_info_vram_total in MiB while amdgpu is bound; for an integrated GPU this is the
    # firmware carve-out that is active this boot, and it is taken out of MemTotal
    vram_mib: int | None = None
    integrated: bool = False
    gtt_used_bytes: int = 0
    boot_vga: bool = False  # only rendered for VGA-class (0x0300xx) devices
    irq: int = 0
    missing: list[str] = field(default_factory=list)  # attribute files left out on purpose

    @property
    def is_vga(self) -> bool:
        return self.pci_class.startswith("0300")


@dataclass
class KfdNode:
    node_id: int
    properties: dict[str, int]  # in kernel order: `key value` lines
    name: str = ""  # e.g. gfx1151; empty for CPU nodes
    gpu_id: int = 0


@dataclass
class Module:
    """A loaded kernel module under /sys/module."""

    name: str
    parameters: dict[str, str] = field(default_factory=dict)
    holders: list[str] = field(default_factory=list)
    version: str | None = None


@dataclass
class Cpu:
    model_name: str
    vendor_id: str = "AuthenticAMD"
    family: int = 26
    model: int = 112
    stepping: int = 0
    microcode: str = "0xb700032"
    threads: int = 32
    cores: int = 16
    mhz: float = 2994.0
    cache_kb: int = 1024
    bogomips: float = 5988.77
    flags: str = ""
    address_sizes: str = "48 bits physical, 48 bits virtual"


@dataclass
class CloudInit:
    installed: bool = True
    state: str = "done"  # done | running | error | none (did not run this boot)
    boot_finished: bool = True  # /var/lib/cloud/instance/boot-finished (survives reboots)
    datasource: str = "DataSourceNoCloud [seed=/var/lib/cloud/seed/nocloud-net]"


@dataclass
class ScheduledShutdown:
    usec: int
    mode: str = "reboot"
    warn_wall: bool = True


@dataclass
class Host:
    # --- the simulator's own control data (also at the top of .magicstick-sim/host.json) ---
    scenario: str
    description: str
    physical_ram_mib: int
    units: dict[str, str] = field(default_factory=dict)  # `systemctl is-active` answers
    driver_after_boot: str = "ready"  # ready | late | never (for the boot effect)
    # the NVIDIA driver of NVIDIA display devices after a boot: ready | late | never
    companion_after_boot: str = "ready"
    faults: list[str] = field(default_factory=list)  # fault injection points, later
    boot_count: int = 0
    boot_id: str = ""
    # seconds the host's CLOCK_BOOTTIME is ahead of the real one: `sim fire-timers --elapse`
    # lets the time pass until a transient timer is due (sim/clock.py); the wall clock stays
    # the real one, which the apiserver shares
    boottime_offset_s: float = 0.0
    # --- what the host shows ---
    hostname: str = "magicstick"
    os_release: dict[str, str] = field(default_factory=dict)  # values exactly as written
    kernel: Kernel = field(default_factory=lambda: Kernel("0.0.0"))
    boot_kernels: list[str] = field(default_factory=list)  # /boot/{vmlinuz,initrd.img}-R
    # release -> /proc/version_signature it shows once booted (Ubuntu kernels only)
    kernel_signatures: dict[str, str] = field(default_factory=dict)
    packages: list[Package] = field(default_factory=list)
    pci: list[PciDevice] = field(default_factory=list)
    kfd_nodes: list[KfdNode] = field(default_factory=list)  # empty: no /sys/class/kfd
    dev_kfd: bool = False
    modules: list[Module] = field(default_factory=list)
    # relative host paths (etc/modprobe.d/x.conf, usr/lib/modprobe.d/...) -> content
    modprobe_files: dict[str, str] = field(default_factory=dict)
    cmdline_args: str = "ro quiet splash"  # after BOOT_IMAGE= and root=
    grub_cmdline_linux_default: str = "quiet splash"
    grub_cmdline_linux: str = ""
    cpu: Cpu = field(default_factory=lambda: Cpu("unknown"))
    dmi: dict[str, str] = field(default_factory=dict)
    cgroup_path: str = CGROUP_SERVICE
    cgroup_memory_max: dict[str, str] = field(default_factory=dict)  # cgroup path -> value
    nvidia_persistenced_socket: bool = False
    cloud_init: CloudInit = field(default_factory=CloudInit)
    shutdown: ScheduledShutdown | None = None
    reboot_required_pkgs: list[str] | None = None  # None: no /run/reboot-required
    merged_usr: bool = True  # /lib, /bin, /sbin are symlinks into /usr
    # the appliance's GPU evidence publisher (/usr/local/sbin/magicstick-gpu-publish)
    gpu_publisher: bool = False
    # the network (interfaces, LANs, access points, netplan files): sim/network.py; None for
    # hosts whose scenarios do not simulate it (`ip`, `iw`, `netplan` are then not found)
    network: SimNetwork | None = None
    # --- model caches (sim/model_cache.py): layouts written once at creation, never
    # re-rendered; extra mount points shown in /proc/self/mountinfo ---
    model_caches: list[str] = field(default_factory=list)
    model_cache_blob_bytes: int = 0  # 0: the layouts' default size per weight file
    mounts: list[str] = field(default_factory=list)

    # --- derived facts ---
    def carveout_mib(self) -> int:
        return sum(d.vram_mib or 0 for d in self.pci if d.integrated)

    def mem_total_kib(self) -> int:
        return (self.physical_ram_mib - self.carveout_mib()) * 1024 - MEM_OVERHEAD_KIB

    def default_ttm_pages(self) -> int:
        """The kernel default for pages_limit and page_pool_size: half of RAM, 4 KiB pages."""
        return self.mem_total_kib() // 4 // 2

    def module(self, name: str) -> Module | None:
        return next((m for m in self.modules if m.name == name), None)

    def package(self, name: str) -> Package | None:
        return next((p for p in self.packages if p.name == name), None)

    def device(self, address: str) -> PciDevice | None:
        return next((d for d in self.pci if d.address == address), None)

    def boot_into(self, release: str) -> None:
        """Run `release` from now on, with its version_signature (None if not known)."""
        self.kernel = Kernel(release, self.kernel_signatures.get(release), self.kernel.arch)

    def newest_boot_kernel(self) -> str | None:
        return max(self.boot_kernels, key=kernel_sort_key, default=None)
