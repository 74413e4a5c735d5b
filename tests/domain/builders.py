"""Hand-built Evidence for the domain tests: a healthy default host, changed per case.

Defaults describe a Strix Halo on Ubuntu 26.04 running the 6.17 HWE-era kernel (not suitable),
with the amdgpu driver loaded and a 1 GiB carve-out (option 1). Tests override one thing at a time.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from magicstick_host.domain.evidence import (
    CarveoutOption,
    Evidence,
    KernelInfo,
    KfdNode,
    MemoryInfo,
    OsInfo,
    PackageInfo,
    PciDevice,
    PciInventory,
    TtmInfo,
    UmaInfo,
    Unknown,
)
from magicstick_host.domain.profiles import Profile
from magicstick_host.profile_store import load_profiles

REPO = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024
TARGET = "7.0.0-31-generic"

# labels as the parser gives them: the firmware's text after "<index>: ", trimmed
OPTIONS = (
    CarveoutOption(0, "Minimum (512 MB)", 512),
    CarveoutOption(1, "(1 GB)", 1024),
    CarveoutOption(2, "(2 GB)", 2048),
    CarveoutOption(3, "(4 GB)", 4096),
    CarveoutOption(4, "(8 GB)", 8192),
    CarveoutOption(7, "Medium (16 GB)", 16384),
    CarveoutOption(9, "High (32 GB)", 32768),
    CarveoutOption(10, "(64 GB)", 65536),
    CarveoutOption(11, "Maximum (96 GB)", 98304),
)
# 128 GiB of RAM with a 1 GiB carve-out, as /proc/meminfo shows it (rounded to whole GiB)
MEM_TOTAL_MI = 130048


def shipped_profiles() -> tuple[Profile, ...]:
    return load_profiles(REPO / "profiles")


def strix(**changes: Any) -> PciDevice:
    dev = PciDevice(
        address="0000:c5:00.0",
        vendor="1002",
        device="1586",
        pci_class="038000",
        revision="c1",
        subsystem_vendor="1462",
        subsystem_device="7e54",
        driver="amdgpu",
        render_nodes=("renderD128",),
        cards=("card1",),
        uma=UmaInfo(options=OPTIONS, selected_index=1),
        vram_total_bytes=1024 * MIB,
        gtt_total_bytes=65536 * MIB,
    )
    return replace(dev, **changes)


def nvidia(**changes: Any) -> PciDevice:
    dev = PciDevice(
        address="0000:01:00.0",
        vendor="10de",
        device="2684",
        pci_class="030000",
        revision="a1",
        subsystem_vendor="10de",
        subsystem_device="167c",
        driver="nvidia",
        render_nodes=("renderD129",),
        cards=("card2",),
    )
    return replace(dev, **changes)


def other_gpu(vendor: str, device: str, **changes: Any) -> PciDevice:
    return nvidia(vendor=vendor, device=device, driver=changes.pop("driver", None), **changes)


def host(
    *,
    version_id: str = "26.04",
    release: str = "6.17.0-14-generic",
    package_version: str | None = None,
    devices: tuple[PciDevice, ...] | None = None,
    installed: dict[str, str] | None = None,
    boot_kernels: tuple[str, ...] | None = None,
    unknowns: tuple[Unknown, ...] = (),
    **changes: Any,
) -> Evidence:
    if package_version is None:
        package_version = "6.17.0-14.14" + ("~24.04.1" if version_id == "24.04" else "")
    if installed is None:
        meta = "linux-generic" if version_id == "26.04" else "linux-generic-hwe-24.04"
        installed = {meta: package_version}
    ev = Evidence(
        os=OsInfo(
            id="ubuntu",
            version_id=version_id,
            codename="resolute" if version_id == "26.04" else "noble",
            pretty_name=f"Ubuntu {version_id}",
        ),
        arch="x86_64",
        kernel=KernelInfo(
            release=release, package_version=package_version, upstream_version="6.17.9"
        ),
        boot_id="6f1c2d4e-8a9b-4c3d-9e2f-1a2b3c4d5e6f",
        cpu_model="AMD RYZEN AI MAX+ 395 w/ Radeon 8060S",
        dmi_vendor="Micro-Star International Co., Ltd.",
        dmi_product="MS-S1 MAX",
        pci=PciInventory(devices=devices if devices is not None else (strix(),), complete=True),
        kfd_nodes=(KfdNode(0, 0, 0), KfdNode(1, 110501, 128)),
        dev_kfd=True,
        memory=MemoryInfo(mem_total_kib=MEM_TOTAL_MI * 1024),
        ttm=TtmInfo(
            module="ttm",
            pages_limit=65536 * 256,
            page_pool_size=65536 * 256,
            amdgpu_gttsize=-1,
        ),
        packages=PackageInfo(
            installed=installed,
            boot_kernels=boot_kernels if boot_kernels is not None else (release,),
        ),
        unknowns=unknowns,
    )
    return replace(ev, **changes)


def ready_host(**kw: Any) -> Evidence:
    """Already running the target kernel with a working driver."""
    version_id = kw.get("version_id", "26.04")
    pkg = "7.0.0-31.31" + ("~24.04.1" if version_id == "24.04" else "")
    kw.setdefault("release", TARGET)
    kw.setdefault("package_version", pkg)
    return host(**kw)
