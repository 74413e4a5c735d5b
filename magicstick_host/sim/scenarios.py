"""The named simulated hosts (`magicstick-host sim list`)."""

from __future__ import annotations

from collections.abc import Callable

from magicstick_host.lite_dataclasses import dataclass
from magicstick_host.sim import catalog
from magicstick_host.sim.builders import (
    GIB_MIB,
    NVIDIA_ADDR,
    SECOND_AMD_ADDR,
    STRIX_ADDR,
    kfd_gpu_node,
    strix_host,
    ubuntu_host,
)
from magicstick_host.sim.memory_playbook import MANAGED_TTM_CONF, managed_ttm_conf
from magicstick_host.sim.model import Host, Kernel, Module, Package, PciDevice
from magicstick_host.sim.model_cache import MODEL_CACHE_SCENARIOS
from magicstick_host.sim.network_scenarios import NETWORK_SCENARIOS

OLD_26 = "6.17.0-8-generic"
HWE_617 = "6.17.0-14-generic"
TARGET = "7.0.0-31-generic"


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    build: Callable[[], Host]


def _with_nvidia(host: Host, *, card: int = 2, render: int = 129) -> Host:
    host.pci += [
        PciDevice(NVIDIA_ADDR, "10de", "2b85", "030000", "a1", "10de", "2058", "nvidia",
                  cards=[f"card{card}"], renders=[f"renderD{render}"], boot_vga=False, irq=160),
        PciDevice("0000:01:00.1", "10de", "22e8", "040300", "a1", "10de", "2058",
                  "snd_hda_intel", irq=161),
    ]
    host.pci.sort(key=lambda d: d.address)
    host.modules += catalog.nvidia_modules()
    host.packages = sorted(host.packages + catalog.nvidia_packages("26.04"), key=lambda p: p.name)
    host.modprobe_files.update(catalog.ubuntu_modprobe_files(nvidia=True))
    host.units["nvidia-persistenced"] = "active"
    host.nvidia_persistenced_socket = True
    return host


def _with_second_amd(host: Host) -> Host:
    host.pci += [
        PciDevice(SECOND_AMD_ADDR, "1002", "7550", "030000", "c0", "1da2", "e490", "amdgpu",
                  cards=["card2"], renders=["renderD129"], connectors=["DP-3"],
                  vram_mib=16 * GIB_MIB, boot_vga=True, irq=170),
        PciDevice("0000:03:00.1", "1002", "ab40", "040300", "00", "1da2", "e490",
                  "snd_hda_intel", irq=171),
    ]
    host.pci.sort(key=lambda d: d.address)
    host.kfd_nodes.append(kfd_gpu_node(2, gfx=120001, device_id="7550",
                                       location=SECOND_AMD_ADDR, render=129, cus=64,
                                       local_mem=16 * GIB_MIB * 1024 * 1024))
    return host


def _strix(
    version: str, release: str, *, bound: bool = True, with_uma: bool = False
) -> Callable[[str, str], Host]:
    return lambda name, desc: strix_host(
        name, desc, version, release, bound=bound, with_uma=with_uma
    )


def _ready_26(name: str, desc: str) -> Host:
    return strix_host(name, desc, "26.04", TARGET, with_uma=True)


def _kfd_missing(name: str, desc: str) -> Host:
    host = strix_host(name, desc, "26.04", TARGET, kfd=False)
    host.driver_after_boot = "never"  # a reboot is not a repair
    return host


def _unbound(name: str, desc: str) -> Host:
    host = strix_host(name, desc, "26.04", TARGET, bound=False)
    host.driver_after_boot = "never"
    return host


def _pending(name: str, desc: str) -> Host:
    host = _ready_26(name, desc)
    gpu = host.device(STRIX_ADDR)
    assert gpu is not None and gpu.uma is not None
    gpu.uma.selected = 9  # 32 GB requested; 512 MB still active until the next boot
    return host


def _foreign_ttm(name: str, desc: str) -> Host:
    host = _ready_26(name, desc)
    pages = 120 * 262144
    host.modprobe_files["etc/modprobe.d/amdgpu-llm.conf"] = (
        "# let the iGPU use up to 120 GiB of RAM (from a forum post)\n"
        f"options ttm pages_limit={pages} page_pool_size={pages}\n"
    )
    _ttm(host).parameters.update(pages_limit=str(pages), page_pool_size=str(pages))
    return host


def _ttm(host: Host) -> Module:
    mod = host.module("ttm")
    assert mod is not None
    return mod


def _memory_configured(name: str, desc: str) -> Host:
    host = _ready_26(name, desc)
    pages = 96 * 262144
    host.modprobe_files[MANAGED_TTM_CONF] = managed_ttm_conf(96 * GIB_MIB)
    _ttm(host).parameters.update(pages_limit=str(pages), page_pool_size=str(pages))
    return host


def _nvidia_datacenter(name: str, desc: str) -> Host:
    host = ubuntu_host(name, desc, "24.04", "6.8.0-85-generic", cpu=catalog.EPYC_CPU,
                       dmi={"sys_vendor": "Supermicro", "product_name": "AS -4125GS-TNRT",
                            "board_vendor": "Supermicro", "board_name": "H13DSG-O-CPU"},
                       physical_ram_mib=768 * GIB_MIB, nvidia=True)
    host.pci = [
        PciDevice("0000:00:00.0", "1022", "14a4", "060000", "01", "15d9", "1c95"),
        PciDevice("0000:02:00.0", "1a03", "2000", "030000", "52", "15d9", "1c95", "ast",
                  cards=["card0"], boot_vga=True, irq=40),  # the BMC's VGA
        PciDevice("0000:41:00.0", "10de", "2335", "030200", "a1", "10de", "18be", "nvidia",
                  cards=["card1"], renders=["renderD128"], irq=200),
        PciDevice("0000:c1:00.0", "10de", "2335", "030200", "a1", "10de", "18be", "nvidia",
                  cards=["card2"], renders=["renderD129"], irq=210),
        PciDevice("0000:c4:00.0", "144d", "a80c", "010802", "00", "144d", "a801", "nvme"),
    ]
    host.modules = [*catalog.nvidia_modules(), Module("ast")]
    host.units["nvidia-persistenced"] = "active"
    host.nvidia_persistenced_socket = True
    host.cmdline_args = "ro console=ttyS0,115200n8"
    return host


def _cpu_only(name: str, desc: str) -> Host:
    host = ubuntu_host(name, desc, "24.04", "6.8.0-85-generic", cpu=catalog.EC2_CPU,
                       dmi={"sys_vendor": "Amazon EC2", "product_name": "c7a.4xlarge",
                            "bios_vendor": "Amazon EC2"}, physical_ram_mib=32 * GIB_MIB)
    host.pci = [
        PciDevice("0000:00:00.0", "8086", "1237", "060000", "00", "1d0f", "1237"),
        PciDevice("0000:00:04.0", "1d0f", "8061", "010802", "00", "1d0f", "8061", "nvme"),
        PciDevice("0000:00:05.0", "1d0f", "ec20", "020000", "00", "1d0f", "ec20", "ena"),
    ]
    host.cmdline_args = "ro console=tty1 console=ttyS0 nvme_core.io_timeout=4294967295"
    host.cloud_init.datasource = "DataSourceEc2Local"
    return host


def _intel_only(name: str, desc: str) -> Host:
    host = ubuntu_host(name, desc, "24.04", "6.14.0-33-generic", cpu=catalog.METEOR_LAKE_CPU,
                       dmi={"sys_vendor": "ASUSTeK COMPUTER INC.", "product_name": "NUC14RVH"},
                       physical_ram_mib=64 * GIB_MIB)
    host.pci = [
        PciDevice("0000:00:00.0", "8086", "7d01", "060000", "04", "1043", "1b4d"),
        PciDevice("0000:00:02.0", "8086", "7d55", "030000", "08", "1043", "1b4d", "i915",
                  cards=["card0"], renders=["renderD128"], connectors=["HDMI-A-1"],
                  boot_vga=True, irq=180),
        PciDevice("0000:00:0d.0", "8086", "7ec0", "0c0330", "01", "1043", "1b4d", "xhci_hcd"),
        PciDevice("0000:01:00.0", "144d", "a80c", "010802", "00", "144d", "a801", "nvme"),
    ]
    host.modules = [Module("i915", {"enable_guc": "-1"}), Module("ttm", holders=["i915"])]
    return host


def _debian(name: str, desc: str) -> Host:
    host = strix_host(name, desc, "26.04", OLD_26)
    release = "6.12.48+deb13-amd64"
    host.os_release = dict(catalog.DEBIAN_13_OS)
    host.kernel = Kernel(release, None)
    host.boot_kernels = [release]
    host.kernel_signatures = {}
    kernel_team = "Debian Kernel Team <debian-kernel@lists.debian.org>"
    host.packages = [
        Package("apt", "3.0.3", "admin", "commandline package manager", priority="important"),
        Package("base-files", "13.8+deb13u1", "admin", "Debian base system miscellaneous files",
                priority="required", essential=True),
        Package("firmware-amd-graphics", "20250410-2", "non-free-firmware/kernel",
                "Binary firmware for AMD/ATI graphics chips", architecture="all"),
        Package("libc6", "2.41-12", "libs", "GNU C Library: Shared libraries",
                priority="required", multi_arch="same", source="glibc"),
        Package("linux-image-amd64", "6.12.48-1", "kernel", "Linux for 64-bit PCs (meta)",
                source="linux-signed-amd64", maintainer=kernel_team),
        Package(f"linux-image-{release}", "6.12.48-1", "kernel", "Linux 6.12 for 64-bit PCs",
                source="linux-signed-amd64", maintainer=kernel_team),
        Package("systemd", "257.8-1~deb13u2", "admin", "system and service manager",
                priority="important"),
    ]
    for pkg in host.packages:
        if pkg.maintainer.startswith("Ubuntu"):
            pkg.maintainer = "Debian Developers <debian-devel@lists.debian.org>"
    host.cmdline_args = "ro quiet"
    host.grub_cmdline_linux_default = "quiet"
    host.cloud_init.installed = False
    return host


def _missing(attr: str, address: str) -> Callable[[str, str], Host]:
    def build(name: str, desc: str) -> Host:
        host = strix_host(name, desc, "26.04", OLD_26)
        if attr == "class":  # the NPU, with its class attribute unreadable
            host.pci.append(PciDevice(address, "1022", "17f0", "118000", "10", "f111", "0006",
                                      "amdxdna", missing=["class"]))
            host.pci.sort(key=lambda d: d.address)
        else:
            dev = host.device(address)
            assert dev is not None
            dev.missing.append(attr)
        return host

    return build


def _no_uma(name: str, desc: str) -> Host:
    host = strix_host(name, desc, "26.04", TARGET, dmi=catalog.HP_DMI)
    return host


def _nvidia_unbound(name: str, desc: str) -> Host:
    host = _with_nvidia(_ready_26(name, desc))
    gpu = host.device(NVIDIA_ADDR)
    assert gpu is not None
    gpu.driver, gpu.cards, gpu.renders = None, [], []
    host.modules = [m for m in host.modules if not m.name.startswith("nvidia")]
    host.units["nvidia-persistenced"] = "failed"
    host.nvidia_persistenced_socket = False
    host.companion_after_boot = "late"  # binds on `companion_binds`, also after a boot
    return host


_TABLE: list[tuple[str, str, Callable[[str, str], Host]]] = [
    ("strix-halo-ubuntu-26.04-old-kernel",
     "Strix Halo, Ubuntu 26.04 on 6.17.0-8 (no gfx1151 fixes): prepare-gpu is available",
     _strix("26.04", OLD_26)),
    ("strix-halo-ubuntu-24.04-hwe-6.17",
     "Strix Halo, Ubuntu 24.04 on the 6.17.0-14 HWE kernel: prepare-gpu is available",
     _strix("24.04", HWE_617)),
    ("strix-halo-ubuntu-26.04-ready",
     "Strix Halo, Ubuntu 26.04 on 7.0.0-31, driver ready, carve-out control, 512 MB active",
     _ready_26),
    ("strix-halo-ubuntu-24.04-ready",
     "Strix Halo, Ubuntu 24.04 on the 7.0.0-31 HWE kernel, driver ready, carve-out control",
     _strix("24.04", TARGET, with_uma=True)),
    ("strix-halo-ubuntu-26.04-no-uma",
     "Strix Halo (HP), Ubuntu 26.04 on 7.0.0-31, driver ready, firmware has no carve-out control",
     _no_uma),
    ("strix-halo-ubuntu-26.04-driver-failing",
     "Strix Halo, Ubuntu 26.04 on 7.0.0-31, amdgpu bound but no gfx1151 KFD node, no /dev/kfd",
     _kfd_missing),
    ("strix-halo-ubuntu-26.04-driver-unbound",
     "Strix Halo, Ubuntu 26.04 on 7.0.0-31, amdgpu loaded but not bound to the GPU",
     _unbound),
    ("strix-halo-ubuntu-26.04-carveout-pending",
     "Strix Halo ready on 7.0.0-31; 32 GB carve-out selected, 512 MB active until the next boot",
     _pending),
    ("strix-halo-ubuntu-26.04-foreign-ttm",
     "Strix Halo ready on 7.0.0-31 with a foreign `options ttm pages_limit=` in modprobe.d",
     _foreign_ttm),
    ("strix-halo-ubuntu-26.04-memory-configured",
     "Strix Halo ready on 7.0.0-31 with the managed TTM file active (96 GiB dynamic limit)",
     _memory_configured),
    ("strix-halo-nvidia-ubuntu-26.04-old-kernel",
     "Strix Halo + NVIDIA RTX 5090 (nvidia 580.95.05), Ubuntu 26.04 on 6.17.0-8",
     lambda n, d: _with_nvidia(strix_host(n, d, "26.04", OLD_26))),
    ("strix-halo-nvidia-ubuntu-26.04-ready",
     "Strix Halo + NVIDIA RTX 5090, Ubuntu 26.04 on 7.0.0-31, both drivers ready, carve-out "
     "control", lambda n, d: _with_nvidia(_ready_26(n, d))),
    ("strix-halo-nvidia-unbound-ubuntu-26.04-ready",
     "Strix Halo ready on 7.0.0-31 + an NVIDIA GPU with no driver bound yet",
     _nvidia_unbound),
    ("strix-halo-second-amd-ubuntu-26.04-old-kernel",
     "Strix Halo + a second AMD GPU (1002:7550, gfx1201), Ubuntu 26.04 on 6.17.0-8",
     lambda n, d: _with_second_amd(strix_host(n, d, "26.04", OLD_26))),
    ("strix-halo-second-amd-ubuntu-26.04-ready",
     "Strix Halo + a second AMD GPU (1002:7550), Ubuntu 26.04 on 7.0.0-31, carve-out control",
     lambda n, d: _with_second_amd(_ready_26(n, d))),
    ("nvidia-datacenter-ubuntu-24.04",
     "2x NVIDIA H200 (10de:2335, class 0x0302) + BMC VGA, Ubuntu 24.04 on 6.8, no Strix Halo",
     _nvidia_datacenter),
    ("cpu-only-ubuntu-24.04",
     "EC2-like VM on Ubuntu 24.04 without any display device", _cpu_only),
    ("intel-only-ubuntu-24.04",
     "Intel Meteor Lake iGPU (8086:7d55, i915) on Ubuntu 24.04, no AMD or NVIDIA GPU",
     _intel_only),
    ("strix-halo-debian-13",
     "Strix Halo on Debian 13 (trixie, 6.12): an OS without a reviewed profile", _debian),
    ("strix-halo-pci-missing-class",
     "Strix Halo, Ubuntu 26.04; the NPU at 0000:c4:00.0 has no `class` file: incomplete PCI",
     _missing("class", "0000:c4:00.0")),
    ("strix-halo-pci-missing-vendor",
     "Strix Halo, Ubuntu 26.04; the GPU's HDMI audio has no `vendor` file: incomplete PCI",
     _missing("vendor", "0000:c5:00.1")),
    # hosts with a simulated network (ip, iw, netplan): sim/network_scenarios.py
    *NETWORK_SCENARIOS,
]


_TABLE += MODEL_CACHE_SCENARIOS  # hosts with model caches, hostile ones included


def _scenario(name: str, description: str, build: Callable[[str, str], Host]) -> Scenario:
    return Scenario(name, description, lambda: build(name, description))


SCENARIOS: dict[str, Scenario] = {n: _scenario(n, d, b) for n, d, b in _TABLE}


def list_scenarios() -> list[tuple[str, str]]:
    return [(s.name, s.description) for s in SCENARIOS.values()]
