"""collect_evidence on whole fake hosts: the ready Strix Halo and its variations."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from magicstick_host.collect import collect_evidence
from magicstick_host.domain.evidence import (
    CarveoutOption,
    Evidence,
    KfdNode,
    ScheduledShutdown,
    TtmOverride,
    UmaInfo,
)
from magicstick_host.ports.hostfs import RootedHostFS
from magicstick_host.ports.runner import OUTPUT_TOO_LARGE
from tests.collect.fakehost import BOOT_ID, STRIX_ADDR, FakeHost, ready_strix_halo
from tests.collect.runners import FakeRunner

STRIX_DIR = f"/sys/devices/pci0000:00/{STRIX_ADDR}"


def collect(host: FakeHost, runner: FakeRunner | None = None) -> Evidence:
    return collect_evidence(RootedHostFS(str(host.root)), runner or FakeRunner(),
                            ["linux-generic", "rocm-smi"])


@pytest.fixture
def strix(tmp_path: Path) -> FakeHost:
    return ready_strix_halo(tmp_path)


def test_ready_strix_halo(strix: FakeHost) -> None:
    runner = FakeRunner()
    ev = collect(strix, runner)
    assert ev.unknowns == ()
    assert (ev.os.id, ev.os.version_id, ev.os.codename) == ("ubuntu", "26.04", "resolute")
    assert ev.os.pretty_name == "Ubuntu Resolute Raccoon"
    assert ev.arch == "x86_64"
    assert ev.kernel.release == "7.0.0-31-generic"
    assert ev.kernel.package_version == "7.0.0-31.31"
    assert ev.kernel.upstream_version == "7.0.4"
    assert ev.boot_id == BOOT_ID
    assert ev.cpu_model == "AMD RYZEN AI MAX+ 395 w/ Radeon 8060S"
    assert (ev.dmi_vendor, ev.dmi_product) == ("Framework",
                                               "Desktop (AMD Ryzen AI Max 300 Series)")
    assert ev.pci.complete
    (gpu,) = ev.pci.devices
    assert gpu.is_strix_halo and gpu.pci_class == "038000" and gpu.revision == "c1"
    assert gpu.driver == "amdgpu"
    assert gpu.cards == ("card1",) and gpu.render_nodes == ("renderD128",)
    assert gpu.uma == UmaInfo(
        options=(CarveoutOption(0, "Minimum (512 MB)", 512), CarveoutOption(1, "(1 GB)", 1024),
                 CarveoutOption(7, "Medium (16 GB)", 16384),
                 CarveoutOption(9, "High (32 GB)", 32768)),
        selected_index=7,
    )
    assert gpu.vram_total_bytes == 512 * 1024 * 1024
    assert gpu.gtt_total_bytes == 64 * 1024**3
    assert ev.kfd_nodes == (KfdNode(0, 0, 0), KfdNode(1, 110501, 128))
    assert ev.dev_kfd
    assert ev.memory.mem_total_kib == 131023872
    assert ev.memory.cgroup_limit_bytes == 1073741824
    assert ev.ttm.module == "ttm"
    assert ev.ttm.pages_limit == ev.ttm.page_pool_size == 16777216
    assert ev.ttm.amdgpu_gttsize == -1
    assert ev.ttm.managed_file_present and ev.ttm.managed_pages_limit == 16777216
    assert ev.ttm.overrides == ()
    assert ev.packages.installed == {"linux-generic": "7.0.0-31.31",
                                     "linux-image-7.0.0-31-generic": "7.0.0-31.31"}
    assert ev.packages.boot_kernels == ("7.0.0-31-generic",)
    assert ev.nvidia.driver_version is None and ev.nvidia.persistenced_active is None
    # no NVIDIA device: systemctl is never asked (the network tools are: collect/network.py)
    assert [c for c in runner.calls if c[0] == "systemctl"] == []
    assert ev.services.cloud_init_present and ev.services.cloud_init_finished
    assert ev.services.shutdown_scheduled is None and not ev.services.reboot_required


def test_hwe_24_04(strix: FakeHost) -> None:
    strix.file("/proc/version_signature", "Ubuntu 7.0.0-31.31~24.04.1-generic 7.0.4\n")
    ev = collect(strix)
    assert ev.kernel.package_version == "7.0.0-31.31~24.04.1"


def test_signature_of_another_kernel_is_unknown(strix: FakeHost) -> None:
    strix.file("/proc/version_signature", "Ubuntu 6.8.0-45.45-generic 6.8.12\n")
    ev = collect(strix)
    assert ev.kernel.package_version is None
    assert [u.field for u in ev.unknowns] == ["kernel.package_version"]


# a display host (VGA-compatible controller, 0x0300) is asked about nvidia-persistenced; a
# compute GPU (3D controller, 0x0302: H100) keeps the GPU Operator's path and is not
# (convergence.md, "NVIDIA display hosts")
@pytest.mark.parametrize(("device", "pci_class", "asked"),
                         [("2684", "030000", True), ("2330", "030200", False)])
def test_nvidia_host(tmp_path: Path, device: str, pci_class: str, asked: bool) -> None:
    h = FakeHost(tmp_path)
    h.pci("0000:01:00.0", "10de", device, pci_class, driver="nvidia",
          drm=("card0", "renderD128"))
    h.file("/sys/module/nvidia/version", "580.95.05\n")
    h.socket("/run/nvidia-persistenced/socket")
    ev = collect(h, FakeRunner(returncode=0))
    (gpu,) = ev.pci.devices
    assert gpu.driver == "nvidia" and gpu.uma is None and gpu.vram_total_bytes is None
    assert ev.nvidia.driver_version == "580.95.05"
    assert ev.nvidia.persistenced_active is (True if asked else None)
    assert ev.nvidia.persistenced_socket
    assert ev.nvidia.persistenced_socket_kind == "socket"
    assert not ev.unknown("nvidia") and not ev.unknown("pci")


@pytest.mark.parametrize(("code", "active"), [
    (0, True), (3, False), (127, None), (124, None), (OUTPUT_TOO_LARGE, None)])
def test_persistenced_states(tmp_path: Path, code: int, active: bool | None) -> None:
    h = FakeHost(tmp_path)
    h.pci("0000:01:00.0", "10de", "2684", "030000", driver="nvidia")
    h.file("/proc/driver/nvidia/version",
           "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Tue Sep 23 2025\n")
    runner = FakeRunner(returncode=code)
    ev = collect(h, runner)
    assert [c for c in runner.calls if c[0] == "systemctl"] == [
        ("systemctl", "is-active", "nvidia-persistenced")
    ]
    assert ev.nvidia.persistenced_active is active
    assert ev.nvidia.driver_version == "580.95.05"
    assert bool(ev.unknown("nvidia.persistenced_active")) is (active is None)


def test_incomplete_device_missing_class(strix: FakeHost) -> None:
    # a device that is not (visibly) a GPU still makes the inventory incomplete
    strix.pci("0000:02:00.0", "1b21", "2142", None)
    ev = collect(strix)
    assert not ev.pci.complete
    assert [u.field for u in ev.unknown("pci")] == ["pci.devices.0000:02:00.0.class"]
    assert len(ev.pci.strix_halo) == 1


def test_unbound_amd_and_no_uma(strix: FakeHost) -> None:
    strix.remove(f"{STRIX_DIR}/driver")
    for name in ("uma/carveout_options", "uma/carveout", "mem_info_vram_total",
                 "mem_info_gtt_total"):
        strix.remove(f"{STRIX_DIR}/{name}")
    strix.path(f"{STRIX_DIR}/uma").rmdir()
    ev = collect(strix)
    (gpu,) = ev.pci.devices
    assert gpu.driver is None and gpu.uma is None and gpu.vram_total_bytes is None
    assert not ev.unknown("pci") and ev.pci.complete


def test_uma_garbage(strix: FakeHost) -> None:
    strix.file(f"{STRIX_DIR}/uma/carveout_options", "0: Minimum (512 MB)\n0: Dup (1 GB)\n")
    strix.file(f"{STRIX_DIR}/uma/carveout", "8\n")
    ev = collect(strix)
    (gpu,) = ev.pci.devices
    assert gpu.uma == UmaInfo(options=None, selected_index=8)
    assert [u.field for u in ev.unknowns] == [f"pci.devices.{STRIX_ADDR}.uma.options"]
    assert ev.pci.complete


def test_selected_index_not_an_option(strix: FakeHost) -> None:
    strix.file(f"{STRIX_DIR}/uma/carveout", "8\n")
    ev = collect(strix)
    assert ev.pci.devices[0].uma is not None
    assert ev.pci.devices[0].uma.selected_index is None
    assert ev.unknowns[0].reason == (
        f"/sys/bus/pci/devices/{STRIX_ADDR}/uma/carveout: index 8 is not an option")


def test_overrides_everywhere(strix: FakeHost) -> None:
    strix.file("/etc/modprobe.d/50-rocm.conf", "options amdttm pages_limit=1\n")
    strix.file("/etc/modprobe.d/50-rocm.conf.disabled", "options ttm pages_limit=1\n")
    strix.file("/usr/lib/modprobe.d/60-amd.conf", "options amdgpu \\\n gttsize=4096\n")
    # shadowed by the managed file of the same name in /etc
    strix.file("/lib/modprobe.d/90-magicstick-ttm.conf", "options ttm pages_limit=2\n")
    strix.file("/proc/cmdline", "ro quiet ttm.pages_limit=3\n")
    strix.file("/etc/default/grub", 'GRUB_CMDLINE_LINUX_DEFAULT="quiet amdgpu.gartsize=1"\n')
    strix.file("/etc/default/grub.d/50-cloudimg.cfg",
               'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT '
               'amd_ttm.page_pool_size=4"\n')
    ev = collect(strix)
    assert ev.unknowns == ()
    assert ev.ttm.overrides == (
        TtmOverride("/etc/modprobe.d/50-rocm.conf", "options amdttm pages_limit=1"),
        TtmOverride("/usr/lib/modprobe.d/60-amd.conf", "options amdgpu gttsize=4096"),
        TtmOverride("/proc/cmdline", "ttm.pages_limit=3"),
        TtmOverride("/etc/default/grub", "amdgpu.gartsize=1"),
        TtmOverride("/etc/default/grub.d/50-cloudimg.cfg", "amd_ttm.page_pool_size=4"),
    )


def test_amdgpu_not_loaded(tmp_path: Path) -> None:
    ev = collect(FakeHost(tmp_path).file("/etc/modprobe.d/x.conf", "options ttm pages_limit=1\n"))
    assert ev.ttm.module is None and ev.ttm.pages_limit is None
    assert not ev.unknown("ttm.module")
    assert not ev.ttm.managed_file_present
    assert len(ev.ttm.overrides) == 1


def test_amdttm_holder(strix: FakeHost) -> None:
    strix.remove("/sys/module/ttm/holders/amdgpu")
    strix.link("/sys/module/amdttm/holders/amdgpu", "../../amdgpu")
    strix.file("/sys/module/amdttm/parameters/pages_limit", "100\n")
    strix.file("/sys/module/amdttm/parameters/page_pool_size", "50\n")
    ev = collect(strix)
    assert (ev.ttm.module, ev.ttm.pages_limit, ev.ttm.page_pool_size) == ("amdttm", 100, 50)


def test_no_ttm_holder_is_unknown(strix: FakeHost) -> None:
    strix.remove("/sys/module/ttm/holders/amdgpu")
    ev = collect(strix)
    assert ev.ttm.module is None and ev.ttm.pages_limit is None
    assert [u.field for u in ev.unknowns] == ["ttm.module"]


def test_services_pending(strix: FakeHost) -> None:
    strix.remove("/run/cloud-init/result.json")
    strix.file("/run/systemd/shutdown/scheduled", "USEC=1764480000000000\nWARN_WALL=1\n"
               "MODE=reboot\nUID=0\n")
    strix.file("/run/reboot-required", "*** System restart required ***\n")
    ev = collect(strix)
    assert ev.services.cloud_init_finished is False and ev.services.cloud_init_present
    assert ev.services.shutdown_scheduled == ScheduledShutdown("reboot", 1764480000000000)
    assert ev.services.reboot_required


def test_cloud_init_absent_or_disabled(strix: FakeHost) -> None:
    strix.file("/etc/cloud/cloud-init.disabled")
    assert not collect(strix).services.cloud_init_present
    strix.remove("/etc/cloud/cloud-init.disabled").remove("/usr/bin/cloud-init")
    assert not collect(strix).services.cloud_init_present


def test_cgroup_max_everywhere(strix: FakeHost) -> None:
    strix.file("/sys/fs/cgroup/system.slice/magicstick-host-management.service/memory.max",
               "max\n")
    ev = collect(strix)
    assert ev.memory.cgroup_limit_bytes is None and ev.unknowns == ()


def test_cgroup_min_up_the_tree(strix: FakeHost) -> None:
    strix.file("/sys/fs/cgroup/system.slice/memory.max", "1000\n")
    assert collect(strix).memory.cgroup_limit_bytes == 1000


def test_arch_missing_on_a_tree_is_unknown(strix: FakeHost) -> None:
    strix.remove("/proc/sys/kernel/arch")
    ev = collect(strix)
    assert ev.arch is None and [u.field for u in ev.unknowns] == ["arch"]


def test_multiarch_version_conflict(strix: FakeHost) -> None:
    strix.file("/var/lib/dpkg/status",
               "Package: linux-generic\nStatus: install ok installed\nArchitecture: amd64\n"
               "Multi-Arch: same\nVersion: 1\n\nPackage: linux-generic\n"
               "Status: install ok installed\nArchitecture: i386\nMulti-Arch: same\n"
               "Version: 2\n")
    ev = collect(strix)
    assert "linux-generic" not in ev.packages.installed
    assert [u.field for u in ev.unknowns] == ["packages.installed.linux-generic"]


@pytest.mark.parametrize(("make", "kind"), [
    (lambda h: h.socket("/run/nvidia-persistenced/socket"), "socket"),
    (lambda h: h.file("/run/nvidia-persistenced/socket"), "other"),
    (lambda h: h.dir("/run/nvidia-persistenced/socket"), "other"),
    (lambda h: h.dir("/run/nvidia-persistenced"), "missing"),
    (lambda h: h.link("/run/nvidia-persistenced/socket", "/run/nowhere"), "missing"),
    (lambda h: h.link("/run/nvidia-persistenced", "/run/nvidia-persistenced"), "unknown"),
])
def test_persistenced_socket_must_be_a_socket(
    tmp_path: Path, make: Callable[[FakeHost], object], kind: str
) -> None:
    """`test -S`: only a socket counts; a plain file left behind is no running daemon."""
    h = FakeHost(tmp_path)
    h.pci("0000:01:00.0", "10de", "2684", "030000", driver="nvidia")
    h.file("/sys/module/nvidia/version", "595.91.07\n")
    make(h)
    ev = collect(h, FakeRunner(returncode=0))
    assert ev.nvidia.persistenced_socket_kind == kind
    assert ev.nvidia.persistenced_socket is (kind == "socket")
    assert bool(ev.unknown("nvidia.persistenced_socket")) is (kind == "unknown")


def test_a_non_coinstallable_second_architecture_makes_the_database_unknown(
    strix: FakeHost,
) -> None:
    """dpkg-query refuses this file (no Multi-Arch: same): nobody can say what is installed."""
    strix.file("/var/lib/dpkg/status",
               "Package: linux-generic\nStatus: install ok installed\nArchitecture: amd64\n"
               "Version: 1\n\nPackage: linux-generic\nStatus: install ok installed\n"
               "Architecture: i386\nVersion: 2\n")
    ev = collect(strix)
    assert ev.packages.installed == {}
    assert [u.field for u in ev.unknowns] == ["packages.installed"]


def test_a_kernel_awaiting_triggers_is_unsettled_not_absent(strix: FakeHost) -> None:
    """An interrupted trigger run: the image awaits initramfs-tools' trigger (`iW`),
    initramfs-tools has it pending (`it`); neither is installed nor absent (issue #25)."""
    strix.file("/var/lib/dpkg/status",
               "Package: linux-generic\nStatus: install ok installed\nArchitecture: amd64\n"
               "Version: 7.0.0-31.31\n\n"
               "Package: linux-image-7.0.0-31-generic\nStatus: install ok triggers-awaited\n"
               "Architecture: amd64\nVersion: 7.0.0-31.31\nTriggers-Awaited: initramfs-tools\n\n"
               "Package: initramfs-tools\nStatus: install ok triggers-pending\n"
               "Architecture: all\nVersion: 0.142\nTriggers-Pending: update-initramfs\n\n"
               "Package: old\nStatus: install reinstreq half-installed\nArchitecture: amd64\n"
               "Version: 1\n")
    ev = collect(strix)
    assert "linux-image-7.0.0-31-generic" not in ev.packages.installed
    assert [(u.package, u.status) for u in ev.packages.unsettled] == [
        ("initramfs-tools", "install ok triggers-pending"),
        ("linux-image-7.0.0-31-generic", "install ok triggers-awaited"),
        ("old", "install reinstreq half-installed"),
    ]
    assert [u.fix for u in ev.packages.unsettled] == [
        "dpkg --configure -a", "dpkg --configure -a", "apt-get install --reinstall old"]
    assert not ev.unknown("packages")
