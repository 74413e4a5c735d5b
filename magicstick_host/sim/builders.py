"""Devices, KFD nodes and whole-host templates the scenarios are made of."""

from __future__ import annotations

import copy

from magicstick_host.sim import catalog
from magicstick_host.sim.model import (
    CGROUP_SERVICE,
    Cpu,
    Host,
    Kernel,
    KfdNode,
    PciDevice,
    Uma,
    UmaOption,
)

GIB_MIB = 1024
STRIX_ADDR = "0000:c5:00.0"
NVIDIA_ADDR = "0000:01:00.0"
SECOND_AMD_ADDR = "0000:03:00.0"
# (index, name, size in MiB): 13 options from 512 MB up to the 96 GB BIOS maximum
CARVEOUT_OPTIONS = [
    (0, "Minimum", 512), (1, "", 1024), (2, "", 2048), (3, "", 3072), (4, "", 4096),
    (5, "", 6144), (6, "", 8192), (7, "Medium", 16384), (8, "", 24576), (9, "High", 32768),
    (10, "", 49152), (11, "", 65536), (12, "Maximum", 98304),
]


def uma(selected: int = 0) -> Uma:
    return Uma([UmaOption(i, n, s) for i, n, s in CARVEOUT_OPTIONS], selected)


def strix_platform() -> list[PciDevice]:
    """The non-GPU functions of a Strix Halo board, plus the GPU's HDMI audio."""
    return [
        PciDevice("0000:00:00.0", "1022", "14e8", "060000", "00", "1022", "14e8"),
        PciDevice("0000:c1:00.0", "144d", "a80c", "010802", "00", "144d", "a801", "nvme",
                  irq=61),
        PciDevice("0000:c2:00.0", "10ec", "8126", "020000", "01", "f111", "0006", "r8169",
                  irq=76),
        PciDevice("0000:c5:00.1", "1002", "1640", "040300", "00", "f111", "0006",
                  "snd_hda_intel", irq=130),
        PciDevice("0000:c6:00.0", "1022", "15b6", "0c0330", "00", "f111", "0006", "xhci_hcd",
                  irq=83),
    ]


def strix_gpu(*, bound: bool = True, carveout_mib: int = 512, with_uma: bool = False,
              selected: int = 0, card: int = 1, render: int = 128) -> PciDevice:
    return PciDevice(
        STRIX_ADDR, "1002", "1586", "038000", "c1", "f111", "0006",
        driver="amdgpu" if bound else None,
        cards=[f"card{card}"] if bound else [],
        renders=[f"renderD{render}"] if bound else [],
        connectors=["DP-1", "DP-2", "HDMI-A-1"] if bound else [],
        uma=uma(selected) if bound and with_uma else None,
        vram_mib=carveout_mib, integrated=True, gtt_used_bytes=25_165_824, irq=129,
    )


def kfd_cpu_node(cpu: Cpu) -> KfdNode:
    props = dict.fromkeys(_KFD_KEYS, 0)
    props.update(cpu_cores_count=cpu.threads, mem_banks_count=1, io_links_count=1,
                 max_engine_clk_ccompute=5187)
    return KfdNode(0, props)


def kfd_gpu_node(node_id: int, *, gfx: int, device_id: str, location: str, render: int,
                 cus: int, local_mem: int = 0) -> KfdNode:
    """A GPU node; `location` is the PCI address, `local_mem` bytes (0 on an APU)."""
    bus, devfn = location.split(":")[1], location.split(":")[2]
    dev, fn = devfn.split(".")
    props = dict.fromkeys(_KFD_KEYS, 0)
    props.update(
        simd_count=cus * 2, mem_banks_count=1, caches_count=3 * cus, io_links_count=1,
        simd_id_base=2147487744 + 1000 * node_id, max_waves_per_simd=16, lds_size_in_kb=64,
        num_gws=64, wave_front_size=32, array_count=cus // 10 * 2, simd_arrays_per_engine=2,
        cu_per_simd_array=10, simd_per_cu=2, max_slots_scratch_cu=32, gfx_target_version=gfx,
        vendor_id=0x1002, device_id=int(device_id, 16),
        location_id=int(bus, 16) << 8 | int(dev, 16) << 3 | int(fn),
        drm_render_minor=render, num_sdma_engines=2, num_sdma_queues_per_engine=6,
        num_cp_queues=8, max_engine_clk_fcompute=2900, local_mem_size=local_mem,
        fw_version=2232, capability=671588992, capability2=0, debug_prop=1495,
        sdma_fw_version=14, unique_id=17_295_582_912_374_291_456 + node_id, num_xcc=1,
        max_engine_clk_ccompute=5187,
    )
    return KfdNode(node_id, props, name=f"gfx{gfx // 10000}{gfx // 100 % 100:x}{gfx % 100:x}",
                   gpu_id=50_000 + 7 * node_id)


_KFD_KEYS = (
    "cpu_cores_count", "simd_count", "mem_banks_count", "caches_count", "io_links_count",
    "p2p_links_count", "cpu_core_id_base", "simd_id_base", "max_waves_per_simd",
    "lds_size_in_kb", "gds_size_in_kb", "num_gws", "wave_front_size", "array_count",
    "simd_arrays_per_engine", "cu_per_simd_array", "simd_per_cu", "max_slots_scratch_cu",
    "gfx_target_version", "vendor_id", "device_id", "location_id", "domain",
    "drm_render_minor", "hive_id", "num_sdma_engines", "num_sdma_xgmi_engines",
    "num_sdma_queues_per_engine", "num_cp_queues", "max_engine_clk_fcompute", "local_mem_size",
    "fw_version", "capability", "capability2", "debug_prop", "sdma_fw_version", "unique_id",
    "num_xcc", "max_engine_clk_ccompute",
)

# kernel release -> (version_signature, image package version, meta package, meta version)
UBUNTU_KERNELS = {
    ("26.04", "6.17.0-8-generic"): (
        "Ubuntu 6.17.0-8.8-generic 6.17.2", "6.17.0-8.8", "linux-generic", "6.17.0-8.8"),
    ("26.04", "7.0.0-31-generic"): (
        "Ubuntu 7.0.0-31.31-generic 7.0.4", "7.0.0-31.31", "linux-generic", "7.0.0-31.31"),
    ("24.04", "6.17.0-14-generic"): (
        "Ubuntu 6.17.0-14.14~24.04.1-generic 6.17.9", "6.17.0-14.14~24.04.1",
        "linux-generic-hwe-24.04", "6.17.0-14.14~24.04.1"),
    ("24.04", "7.0.0-31-generic"): (
        "Ubuntu 7.0.0-31.31~24.04.1-generic 7.0.4", "7.0.0-31.31~24.04.1",
        "linux-generic-hwe-24.04", "7.0.0-31.31~24.04.1"),
    ("24.04", "6.8.0-85-generic"): (
        "Ubuntu 6.8.0-85.85-generic 6.8.12", "6.8.0-85.85", "linux-generic", "6.8.0-85.85"),
    ("24.04", "6.14.0-33-generic"): (
        "Ubuntu 6.14.0-33.33~24.04.1-generic 6.14.11", "6.14.0-33.33~24.04.1",
        "linux-generic-hwe-24.04", "6.14.0-33.33~24.04.1"),
}


def ubuntu_kernel_signature(version: str, release: str) -> str | None:
    """The version_signature of a known Ubuntu kernel, for an effect that installs it."""
    known = UBUNTU_KERNELS.get((version, release))
    return known[0] if known else None


def ubuntu_host(name: str, description: str, version: str, release: str, *, cpu: Cpu,
                dmi: dict[str, str], physical_ram_mib: int, nvidia: bool = False) -> Host:
    """An Ubuntu host with one kernel installed and running, and no GPU devices yet."""
    signature, image_version, meta, meta_version = UBUNTU_KERNELS[(version, release)]
    packages = catalog.base_packages(version) + catalog.kernel_packages(
        release, image_version, meta, meta_version,
        signed_source=catalog.signed_source(meta, release))
    if nvidia:
        packages += catalog.nvidia_packages(version)
    return Host(
        scenario=name, description=description, physical_ram_mib=physical_ram_mib,
        hostname=name.split("-")[0] + "-01", os_release=catalog.ubuntu_os(version),
        kernel=Kernel(release, signature), boot_kernels=[release],
        kernel_signatures={release: signature},
        packages=sorted(packages, key=lambda p: p.name),
        modprobe_files=catalog.ubuntu_modprobe_files(nvidia=nvidia),
        cpu=copy.deepcopy(cpu), dmi=dict(dmi),
        cgroup_memory_max={"/system.slice": "max", CGROUP_SERVICE: "max"},
    )


def strix_host(name: str, description: str, version: str, release: str, *,
               bound: bool = True, with_uma: bool = False, kfd: bool = True,
               dmi: dict[str, str] | None = None) -> Host:
    """Strix Halo with 128 GiB, amdgpu bound and its KFD node unless told otherwise."""
    host = ubuntu_host(name, description, version, release, cpu=catalog.STRIX_HALO_CPU,
                       dmi=dmi or catalog.FRAMEWORK_DMI, physical_ram_mib=128 * GIB_MIB)
    host.pci = [*strix_platform(), strix_gpu(bound=bound, with_uma=with_uma)]
    host.pci.sort(key=lambda d: d.address)
    host.modules = catalog.amdgpu_modules()
    if bound and kfd:
        host.kfd_nodes = [kfd_cpu_node(host.cpu), kfd_strix_node()]
        host.dev_kfd = True
    return host


def kfd_strix_node(node_id: int = 1, render: int = 128) -> KfdNode:
    return kfd_gpu_node(node_id, gfx=110501, device_id="1586", location=STRIX_ADDR,
                        render=render, cus=40)
