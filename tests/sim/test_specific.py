"""The facts each scenario exists for."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from magicstick_host.sim.writer import create_host
from tests.sim.helpers import PCI, STRIX, parse_deb822, read

STRIX_NAMES = [
    "strix-halo-ubuntu-26.04-old-kernel", "strix-halo-ubuntu-24.04-hwe-6.17",
    "strix-halo-ubuntu-26.04-ready", "strix-halo-ubuntu-24.04-ready",
    "strix-halo-ubuntu-26.04-driver-failing", "strix-halo-ubuntu-26.04-driver-unbound",
    "strix-halo-nvidia-ubuntu-26.04-old-kernel", "strix-halo-second-amd-ubuntu-26.04-ready",
    "strix-halo-debian-13", "strix-halo-ubuntu-26.04-no-uma",
]


def make(name: str, tmp_path: Path) -> Path:
    root = tmp_path / "host"
    create_host(name, root)
    return root


def installed(root: Path) -> dict[str, str]:
    return {
        s["Package"]: s["Version"]
        for s in parse_deb822(read(root, "var/lib/dpkg/status"))
        if s["Status"] == "install ok installed"
    }


def driver(root: Path, addr: str) -> str | None:
    link = root / PCI / addr / "driver"
    return os.path.basename(os.readlink(link)) if link.is_symlink() else None


@pytest.mark.parametrize("name", STRIX_NAMES)
def test_strix_halo_identity(name: str, tmp_path: Path) -> None:
    root = make(name, tmp_path)
    gpu = f"sys/bus/pci/devices/{STRIX}"
    assert read(root, f"{gpu}/vendor") == "0x1002\n"
    assert read(root, f"{gpu}/device") == "0x1586\n"
    assert read(root, f"{gpu}/class") == "0x038000\n"
    assert read(root, f"{gpu}/revision") == "0xc1\n"
    assert not (root / gpu / "boot_vga").exists()
    assert read(root, "sys/bus/pci/devices/0000:c5:00.1/device") == "0x1640\n"
    assert read(root, "sys/bus/pci/devices/0000:c5:00.1/class") == "0x040300\n"
    for addr, cls in [("0000:00:00.0", "0x060000"), ("0000:c1:00.0", "0x010802"),
                      ("0000:c6:00.0", "0x0c0330"), ("0000:c2:00.0", "0x020000")]:
        assert read(root, f"sys/bus/pci/devices/{addr}/class") == cls + "\n"
    assert "model name\t: AMD RYZEN AI MAX+ 395 w/ Radeon 8060S\n" in read(root, "proc/cpuinfo")
    assert read(root, "sys/class/dmi/id/product_name").strip()


def test_ready_26_04(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-ready", tmp_path)
    assert 'VERSION_ID="26.04"\n' in read(root, "etc/os-release")
    assert "VERSION_CODENAME=resolute\n" in read(root, "etc/os-release")
    assert read(root, "proc/sys/kernel/osrelease") == "7.0.0-31-generic\n"
    assert read(root, "proc/version_signature") == "Ubuntu 7.0.0-31.31-generic 7.0.4\n"
    assert installed(root)["linux-generic"] == "7.0.0-31.31"
    assert installed(root)["linux-image-7.0.0-31-generic"] == "7.0.0-31.31"
    assert driver(root, STRIX) == "amdgpu"
    assert (root / "sys/bus/pci/drivers/amdgpu").is_dir()
    dev = (root / "sys/class/drm/renderD128/device").resolve()
    assert dev == (root / PCI / STRIX).resolve()
    assert (root / "sys/class/drm/card1/device").resolve() == dev
    props = read(root, "sys/class/kfd/kfd/topology/nodes/1/properties")
    assert "gfx_target_version 110501\n" in props and "drm_render_minor 128\n" in props
    assert "simd_count 80\n" in props and "cpu_cores_count 0\n" in props
    assert "cpu_cores_count 32\n" in read(root, "sys/class/kfd/kfd/topology/nodes/0/properties")
    assert (root / "dev/kfd").is_file() and (root / "dev/dri/renderD128").is_file()
    assert os.readlink(root / "sys/module/ttm/holders/amdgpu") == "../../amdgpu"
    mem_total = int(re.search(r"MemTotal: +(\d+) kB", read(root, "proc/meminfo"))[1])  # type: ignore[index]
    assert mem_total == 131023872  # about 125 GiB of 128 GiB with a 512 MB carve-out
    half = mem_total // 8
    assert read(root, "sys/module/ttm/parameters/pages_limit") == f"{half}\n"
    assert read(root, "sys/module/ttm/parameters/page_pool_size") == f"{half}\n"
    assert read(root, "sys/module/amdgpu/parameters/gttsize") == "-1\n"
    assert read(root, f"{PCI}/{STRIX}/mem_info_vram_total") == "536870912\n"
    assert read(root, f"{PCI}/{STRIX}/mem_info_gtt_total") == f"{half * 4096}\n"
    assert read(root, f"{PCI}/{STRIX}/uma/carveout") == "0\n"
    options = read(root, f"{PCI}/{STRIX}/uma/carveout_options")
    assert options.startswith("0: Minimum (512 MB)\n1:  (1 GB)\n")
    assert "7: Medium (16 GB)\n" in options and "9: High (32 GB)\n" in options
    assert options.endswith("12: Maximum (96 GB)\n")
    assert not (root / "run/reboot-required").exists()
    assert not (root / "run/systemd/shutdown/scheduled").exists()
    assert (root / "run/cloud-init/result.json").is_file()


def test_ready_24_04_hwe(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-24.04-ready", tmp_path)
    assert "VERSION_CODENAME=noble\n" in read(root, "etc/os-release")
    sig = "Ubuntu 7.0.0-31.31~24.04.1-generic 7.0.4\n"
    assert read(root, "proc/version_signature") == sig
    assert installed(root)["linux-generic-hwe-24.04"] == "7.0.0-31.31~24.04.1"
    assert "linux-generic" not in installed(root)
    assert (root / f"{PCI}/{STRIX}/uma/carveout_options").is_file()


@pytest.mark.parametrize(("name", "release", "meta", "version"), [
    ("strix-halo-ubuntu-26.04-old-kernel", "6.17.0-8-generic", "linux-generic", "6.17.0-8.8"),
    ("strix-halo-ubuntu-24.04-hwe-6.17", "6.17.0-14-generic", "linux-generic-hwe-24.04",
     "6.17.0-14.14~24.04.1"),
])
def test_old_kernels(name: str, release: str, meta: str, version: str, tmp_path: Path) -> None:
    root = make(name, tmp_path)
    assert read(root, "proc/sys/kernel/osrelease") == release + "\n"
    assert installed(root)[meta] == version
    assert sorted(p.name for p in (root / "boot").glob("vmlinuz-*")) == [f"vmlinuz-{release}"]
    assert not (root / PCI / STRIX / "uma").exists()  # Linux 7.0+ only
    if "24.04" in name:
        assert read(root, "proc/version_signature") == (
            "Ubuntu 6.17.0-14.14~24.04.1-generic 6.17.9\n")


def test_driver_failing_and_unbound(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-driver-failing", tmp_path / "a")
    assert driver(root, STRIX) == "amdgpu"
    assert not (root / "dev/kfd").exists()
    assert not (root / "sys/class/kfd").exists()
    root = make("strix-halo-ubuntu-26.04-driver-unbound", tmp_path / "b")
    assert driver(root, STRIX) is None
    assert not (root / "dev/dri").exists() and not (root / "dev/kfd").exists()
    assert not (root / PCI / STRIX / "mem_info_vram_total").exists()


def test_carveout_pending_and_overrides(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-carveout-pending", tmp_path / "a")
    assert read(root, f"{PCI}/{STRIX}/uma/carveout") == "9\n"
    assert read(root, f"{PCI}/{STRIX}/mem_info_vram_total") == "536870912\n"
    root = make("strix-halo-ubuntu-26.04-foreign-ttm", tmp_path / "b")
    conf = read(root, "etc/modprobe.d/amdgpu-llm.conf")
    assert "options ttm pages_limit=31457280 page_pool_size=31457280\n" in conf
    assert read(root, "sys/module/ttm/parameters/pages_limit") == "31457280\n"
    root = make("strix-halo-ubuntu-26.04-memory-configured", tmp_path / "c")
    managed = read(root, "etc/modprobe.d/90-magicstick-ttm.conf")
    assert managed.startswith("# managed by magicstick-host")
    assert "options ttm pages_limit=25165824 page_pool_size=25165824\n" in managed
    assert read(root, "sys/module/ttm/parameters/pages_limit") == "25165824\n"
    root = make("strix-halo-ubuntu-26.04-no-uma", tmp_path / "d")
    assert not (root / PCI / STRIX / "uma").exists()
    assert read(root, "sys/class/dmi/id/sys_vendor") == "HP\n"


def test_strix_with_nvidia(tmp_path: Path) -> None:
    root = make("strix-halo-nvidia-ubuntu-26.04-old-kernel", tmp_path)
    nv = "sys/bus/pci/devices/0000:01:00.0"
    assert (read(root, f"{nv}/vendor"), read(root, f"{nv}/class")) == ("0x10de\n", "0x030000\n")
    assert read(root, f"{nv}/revision") == "0xa1\n" and read(root, f"{nv}/boot_vga") == "0\n"
    assert driver(root, "0000:01:00.0") == "nvidia"
    assert read(root, "sys/module/nvidia/version") == "580.95.05\n"
    assert read(root, "proc/driver/nvidia/version").startswith("NVRM version: ")
    assert (root / "run/nvidia-persistenced/socket").is_socket()
    assert read(root, "proc/sys/kernel/osrelease") == "6.17.0-8-generic\n"
    import json

    units = json.loads(read(root, ".magicstick-sim/host.json"))["units"]
    assert units == {"nvidia-persistenced": "active"}


def test_strix_with_second_amd(tmp_path: Path) -> None:
    root = make("strix-halo-second-amd-ubuntu-26.04-old-kernel", tmp_path)
    assert read(root, "sys/bus/pci/devices/0000:03:00.0/device") == "0x7550\n"
    assert driver(root, "0000:03:00.0") == "amdgpu"
    props = read(root, "sys/class/kfd/kfd/topology/nodes/2/properties")
    assert "gfx_target_version 120001\n" in props and "drm_render_minor 129\n" in props
    assert (root / "dev/dri/renderD129").is_file()
    # the discrete card's VRAM is not taken out of RAM
    ready = make("strix-halo-second-amd-ubuntu-26.04-ready", tmp_path / "r")
    assert "MemTotal:       131023872 kB\n" in read(ready, "proc/meminfo")


def test_non_strix_hosts(tmp_path: Path) -> None:
    root = make("nvidia-datacenter-ubuntu-24.04", tmp_path / "a")
    assert read(root, "sys/bus/pci/devices/0000:41:00.0/class") == "0x030200\n"
    assert read(root, "sys/bus/pci/devices/0000:41:00.0/device") == "0x2335\n"
    assert not (root / "sys/bus/pci/devices" / STRIX).exists()
    root = make("cpu-only-ubuntu-24.04", tmp_path / "b")
    classes = [read(root, f"sys/bus/pci/devices/{a}/class")
               for a in os.listdir(root / "sys/bus/pci/devices")]
    assert not any(c.startswith("0x03") for c in classes)
    assert not (root / "sys/class/drm").exists()
    root = make("intel-only-ubuntu-24.04", tmp_path / "c")
    assert read(root, "sys/bus/pci/devices/0000:00:02.0/device") == "0x7d55\n"
    assert driver(root, "0000:00:02.0") == "i915"
    assert os.readlink(root / "sys/module/ttm/holders/i915") == "../../i915"


def test_unknown_os_and_incomplete_pci(tmp_path: Path) -> None:
    root = make("strix-halo-debian-13", tmp_path / "a")
    assert "ID=debian\n" in read(root, "etc/os-release")
    assert not (root / "proc/version_signature").exists()
    root = make("strix-halo-pci-missing-class", tmp_path / "b")
    npu = root / "sys/bus/pci/devices/0000:c4:00.0"
    assert (npu / "vendor").is_file() and not (npu / "class").exists()
    root = make("strix-halo-pci-missing-vendor", tmp_path / "c")
    audio = root / "sys/bus/pci/devices/0000:c5:00.1"
    assert (audio / "class").is_file() and not (audio / "vendor").exists()
