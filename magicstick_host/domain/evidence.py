"""What the host shows, as plain immutable data.

Every fact that could not be read, or read as garbage, is `None` and has an `Unknown` entry in
`Evidence.unknowns` saying why. Nothing downstream may treat `None` as "fine": the planner turns
it into `blocked` (or a bounded wait), never into an action.

This module is pure data plus a few derived predicates; the collector (collect/) fills it.
"""

from __future__ import annotations

from magicstick_host.domain.network.evidence import NetworkEvidence
from magicstick_host.domain.parsers.dpkg_status import Unsettled
from magicstick_host.lite_dataclasses import dataclass, field

STRIX_HALO_VENDOR = "1002"
STRIX_HALO_DEVICE = "1586"
STRIX_HALO_ID = f"{STRIX_HALO_VENDOR}:{STRIX_HALO_DEVICE}"
AMD_VENDOR = "1002"
NVIDIA_VENDOR = "10de"
INTEL_VENDOR = "8086"
# gfx1151 as the KFD topology writes it: major*10000 + minor*100 + stepping
GFX1151_TARGET_VERSION = 110501
MANAGED_TTM_FILE = "/etc/modprobe.d/90-magicstick-ttm.conf"
# the appliance's GPU evidence publisher (operations.md, prepare-gpu step 5)
GPU_PUBLISHER = "/usr/local/sbin/magicstick-gpu-publish"
TTM_MODULE_NAMES = ("ttm", "amdttm", "amd_ttm")


@dataclass(frozen=True)
class Unknown:
    """A fact we could not establish. `field` is a dotted evidence path."""

    field: str
    reason: str


@dataclass(frozen=True)
class OsInfo:
    id: str | None = None
    version_id: str | None = None
    codename: str | None = None
    pretty_name: str | None = None


@dataclass(frozen=True)
class KernelInfo:
    # `uname -r`, e.g. 7.0.0-31-generic; equals the Node's nodeInfo.kernelVersion
    release: str | None = None
    # the Ubuntu package version of the running kernel image, e.g. 7.0.0-31.31 or
    # 7.0.0-31.31~24.04.1, from /proc/version_signature
    package_version: str | None = None
    # the upstream version after the package version in version_signature, e.g. 7.0.4
    upstream_version: str | None = None


@dataclass(frozen=True)
class CarveoutOption:
    index: int
    # the firmware's text for the option, trimmed: "<name> (<size> <unit>)", e.g.
    # "Minimum (512 MB)", or "(1 GB)" when the name is empty
    label: str
    size_mi: int


@dataclass(frozen=True)
class UmaInfo:
    """The firmware carve-out control of one AMD APU (Linux 7.0+, firmware permitting)."""

    # None: the files exist but could not be parsed (see unknowns)
    options: tuple[CarveoutOption, ...] | None
    # the index `uma/carveout` reads back: the choice for the *next* boot
    selected_index: int | None


@dataclass(frozen=True)
class PciDevice:
    address: str  # e.g. 0000:c5:00.0
    vendor: str  # 4 lowercase hex, no 0x
    device: str
    pci_class: str  # 6 lowercase hex, no 0x
    revision: str | None = None  # 2 lowercase hex
    subsystem_vendor: str | None = None
    subsystem_device: str | None = None
    driver: str | None = None  # None: no driver bound
    render_nodes: tuple[str, ...] = ()  # e.g. ("renderD128",)
    cards: tuple[str, ...] = ()  # e.g. ("card1",)
    # AMD only; None when the device has no uma/ directory (no fixed-reservation control)
    uma: UmaInfo | None = None
    vram_total_bytes: int | None = None
    gtt_total_bytes: int | None = None

    @property
    def pci_id(self) -> str:
        return f"{self.vendor}:{self.device}"

    @property
    def is_display(self) -> bool:
        return self.pci_class.startswith("03")

    @property
    def is_strix_halo(self) -> bool:
        return self.pci_id == STRIX_HALO_ID


@dataclass(frozen=True)
class PciInventory:
    """Display devices (base class 0x03) only."""

    devices: tuple[PciDevice, ...] = ()
    # False when /sys/bus/pci is unreadable or a device misses a mandatory attribute
    complete: bool = False

    @property
    def strix_halo(self) -> tuple[PciDevice, ...]:
        return tuple(d for d in self.devices if d.is_strix_halo)

    @property
    def display_ids(self) -> tuple[str, ...]:
        return tuple(sorted(d.pci_id for d in self.devices))


@dataclass(frozen=True)
class KfdNode:
    node_id: int
    gfx_target_version: int | None
    drm_render_minor: int | None


@dataclass(frozen=True)
class MemoryInfo:
    mem_total_kib: int | None = None
    # the effective cgroup v2 memory.max of this process; None when "max" everywhere or unknown
    cgroup_limit_bytes: int | None = None

    @property
    def mem_total_mi(self) -> int | None:
        return None if self.mem_total_kib is None else self.mem_total_kib // 1024


@dataclass(frozen=True)
class TtmOverride:
    """A setting that competes with the managed TTM limit."""

    source: str  # a host path, or "/proc/cmdline"
    text: str  # the offending line or kernel argument, trimmed


@dataclass(frozen=True)
class TtmInfo:
    # which of ttm/amdttm/amd_ttm amdgpu holds; None if amdgpu is not loaded or unknown
    module: str | None = None
    pages_limit: int | None = None
    page_pool_size: int | None = None
    # amdgpu's gttsize parameter in MiB; -1 is "unset"
    amdgpu_gttsize: int | None = None
    # pages_limit from the managed modprobe file, None if the file is absent
    managed_pages_limit: int | None = None
    managed_file_present: bool = False
    overrides: tuple[TtmOverride, ...] = ()

    @property
    def active_limit_mi(self) -> int | None:
        return None if self.pages_limit is None else self.pages_limit // 256


@dataclass(frozen=True)
class PackageManagerRun:
    """Another package manager run holds the host (operations.md, "When another package manager
    run holds the host"): a process holds dpkg's or apt's lock, or unattended-upgrades runs."""

    lock: str  # the lock file it holds
    pid: int  # 0 when the kernel does not show the holder
    command: str  # its /proc/<pid>/comm ("unattended-upgr"), "" when unknown

    @property
    def who(self) -> str:
        """"unattended-upgr, pid 812", "pid 812", or "a process the kernel does not name"."""
        if not self.pid:
            return f"a process the kernel does not name, holding {self.lock}"
        return f"{self.command}, pid {self.pid}" if self.command else f"pid {self.pid}"


@dataclass(frozen=True)
class PackageInfo:
    # installed versions of the profile packages (and the running kernel image), by name;
    # a package that is not installed is absent
    installed: dict[str, str] = field(default_factory=dict)
    # kernel releases with both /boot/vmlinuz-R and /boot/initrd.img-R
    boot_kernels: tuple[str, ...] = ()
    # every package of the dpkg database that dpkg left between states (`iU`, `iF`, `iH`, `iW`,
    # `it`, any reinst-required): neither installed nor absent, and never in `installed`
    unsettled: tuple[Unsettled, ...] = ()
    # the package manager run that holds the host now, if any; known False when a lock could
    # not be probed (permission denied: an unprivileged inspect), which never means "free"
    manager_run: PackageManagerRun | None = None
    manager_run_known: bool = True


@dataclass(frozen=True)
class NvidiaInfo:
    driver_version: str | None = None
    # None when not asked (no NVIDIA device) or systemctl could not tell
    persistenced_active: bool | None = None
    # a socket is at /run/nvidia-persistenced/socket (`test -S`); False when it cannot be told
    persistenced_socket: bool = False
    # what is at that path: "socket" | "missing" | "other" (not a socket) | "unknown" (unreadable)
    persistenced_socket_kind: str = "missing"


@dataclass(frozen=True)
class ScheduledShutdown:
    mode: str | None  # reboot | poweroff | other text; None if unreadable
    usec: int | None  # realtime microseconds


@dataclass(frozen=True)
class ServicesInfo:
    # True: finished this boot; False: still running; None: cannot tell
    cloud_init_finished: bool | None = None
    # cloud-init is not installed at all: nothing to wait for
    cloud_init_present: bool = True
    shutdown_scheduled: ScheduledShutdown | None = None
    reboot_required: bool = False
    # the appliance's GPU evidence publisher, run just before the runtime handoff
    gpu_publisher_present: bool = False


@dataclass(frozen=True)
class Evidence:
    os: OsInfo = field(default_factory=OsInfo)
    arch: str | None = None  # x86_64, aarch64
    kernel: KernelInfo = field(default_factory=KernelInfo)
    boot_id: str | None = None
    cpu_model: str | None = None
    dmi_vendor: str | None = None
    dmi_product: str | None = None
    pci: PciInventory = field(default_factory=PciInventory)
    kfd_nodes: tuple[KfdNode, ...] = ()
    dev_kfd: bool = False
    memory: MemoryInfo = field(default_factory=MemoryInfo)
    ttm: TtmInfo = field(default_factory=TtmInfo)
    packages: PackageInfo = field(default_factory=PackageInfo)
    nvidia: NvidiaInfo = field(default_factory=NvidiaInfo)
    services: ServicesInfo = field(default_factory=ServicesInfo)
    unknowns: tuple[Unknown, ...] = ()
    # interfaces, routes, netplan and Wi-Fi links (network.md); None: not collected
    network: NetworkEvidence | None = None

    def unknown(self, prefix: str) -> tuple[Unknown, ...]:
        """The unknowns at or below a dotted path, e.g. "pci" or "os.version_id"."""
        return tuple(
            u for u in self.unknowns if u.field == prefix or u.field.startswith(prefix + ".")
        )
