"""Every scenario renders a complete, well-formed host root (formats per host-facts.md)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from magicstick_host.sim.scenarios import SCENARIOS, list_scenarios
from magicstick_host.sim.writer import create_host
from tests.sim.helpers import PCI, STRIX, parse_deb822, read, snapshot

NAMES = sorted(SCENARIOS)
HEX4 = re.compile(r"^0x[0-9a-f]{4}\n$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\n$")
OPTION = re.compile(r"^(\d+): (.*) \((\d+) (GB|MB)\)$")


@pytest.fixture(scope="module", params=NAMES)
def host_root(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    name: str = request.param
    root = tmp_path_factory.mktemp("sim") / name
    create_host(name, root)
    return root


def test_list_scenarios_has_one_line_descriptions() -> None:
    listed = list_scenarios()
    assert [n for n, _ in listed] == list(SCENARIOS)
    assert len(listed) >= 20
    for name, description in listed:
        assert re.fullmatch(r"[a-z0-9.]+(-[a-z0-9.]+)*", name), name
        assert description and "\n" not in description and len(description) <= 100


def test_symlinks_are_relative_and_resolve_inside(host_root: Path) -> None:
    real_root = host_root.resolve()
    for rel, (kind, target) in snapshot(host_root).items():
        if kind != "link":
            continue
        assert not target.startswith("/"), rel
        resolved = (host_root / rel).resolve(strict=True)
        assert resolved.is_relative_to(real_root), rel


def test_pci_attribute_formats(host_root: Path) -> None:
    devices = sorted(os.listdir(host_root / "sys/bus/pci/devices"))
    assert devices
    for addr in devices:
        assert re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", addr)
        link = host_root / "sys/bus/pci/devices" / addr
        assert os.readlink(link) == f"../../../devices/pci0000:00/{addr}"
        base = host_root / PCI / addr
        for name in ("vendor", "device", "subsystem_vendor", "subsystem_device"):
            if (base / name).exists():
                assert HEX4.match((base / name).read_text()), (addr, name)
        if (base / "class").exists():
            assert re.match(r"^0x[0-9a-f]{6}\n$", (base / "class").read_text())
        assert re.match(r"^0x[0-9a-f]{2}\n$", (base / "revision").read_text())
        if (base / "driver").is_symlink():
            target = os.readlink(base / "driver")
            assert re.fullmatch(r"\.\./\.\./\.\./bus/pci/drivers/[a-z0-9_-]+", target)
            assert (base / "driver").is_dir()
        if (base / "class").exists():
            is_vga = (base / "class").read_text().startswith("0x0300")
            assert (base / "boot_vga").exists() == is_vga, addr


def test_drm_class_links_point_back_to_their_device(host_root: Path) -> None:
    drm = host_root / "sys/class/drm"
    if not drm.exists():
        return
    for name in os.listdir(drm):
        device = (drm / name / "device").resolve(strict=True)
        if "-" in name:  # a connector: its device is the card
            assert device.name == name.split("-")[0]
            continue
        assert device.parent.name == "pci0000:00"
        assert (host_root / "dev/dri" / name).is_file()
        minor = int(read(host_root, f"sys/class/drm/{name}/dev").split(":")[1])
        assert name.endswith(str(minor))


def test_dpkg_status_is_deb822(host_root: Path) -> None:
    stanzas = parse_deb822(read(host_root, "var/lib/dpkg/status"))
    assert len(stanzas) >= 6
    names = [s["Package"] for s in stanzas]
    assert len(names) == len(set(names))
    for stanza in stanzas:
        assert {"Package", "Status", "Version", "Architecture"} <= stanza.keys()
        assert stanza["Status"] in ("install ok installed", "deinstall ok config-files")


def test_os_identity_and_proc_formats(host_root: Path) -> None:
    os_release = dict(
        line.split("=", 1) for line in read(host_root, "etc/os-release").splitlines()
    )
    assert {"ID", "VERSION_ID", "PRETTY_NAME"} <= os_release.keys()
    release = read(host_root, "proc/sys/kernel/osrelease")
    assert re.fullmatch(r"\d+\.\d+\.\d+[-+][\w.+-]+\n", release)
    assert read(host_root, "proc/sys/kernel/arch") == "x86_64\n"
    assert UUID.match(read(host_root, "proc/sys/kernel/random/boot_id"))
    assert read(host_root, "proc/cmdline").startswith(f"BOOT_IMAGE=/boot/vmlinuz-{release[:-1]} ")
    meminfo = read(host_root, "proc/meminfo")
    assert re.match(r"^MemTotal: +\d+ kB\n", meminfo)
    assert "\nMemAvailable: " in meminfo and "\nHugepagesize:" in meminfo
    assert re.search(r"^model name\t: .+$", read(host_root, "proc/cpuinfo"), re.M)
    assert read(host_root, "proc/self/cgroup") == (
        "0::/system.slice/magicstick-host-management.service\n"
    )
    service = "sys/fs/cgroup/system.slice/magicstick-host-management.service/memory.max"
    assert read(host_root, service) == "max\n"
    assert read(host_root, "sys/class/dmi/id/sys_vendor").strip()
    rel = release.strip()
    assert (host_root / f"boot/vmlinuz-{rel}").is_file()
    assert (host_root / f"boot/initrd.img-{rel}").is_file()
    if os_release["ID"] == "ubuntu":
        signature = read(host_root, "proc/version_signature")
        assert re.fullmatch(r"Ubuntu \S+-generic \d+\.\d+\.\d+\n", signature)
        assert signature.split()[1].endswith(rel.rsplit("-", 1)[1])


def test_kfd_and_modules(host_root: Path) -> None:
    nodes = host_root / "sys/class/kfd/kfd/topology/nodes"
    if nodes.exists():
        props = read(host_root, "sys/class/kfd/kfd/topology/nodes/0/properties")
        assert "gfx_target_version 0\n" in props
        for node in os.listdir(nodes):
            text = read(host_root, f"sys/class/kfd/kfd/topology/nodes/{node}/properties")
            assert all(re.fullmatch(r"[a-z0-9_]+ \d+", line) for line in text.splitlines())
    for holder in (host_root / "sys/module").glob("*/holders/*"):
        assert os.readlink(holder) == f"../../{holder.name}"
        assert holder.resolve(strict=True).parent.name == "module"
    for params in (host_root / "sys/module").glob("*/parameters/*"):
        assert params.read_text().endswith("\n")


def test_uma_files(host_root: Path) -> None:
    uma = host_root / PCI / STRIX / "uma"
    if not uma.exists():
        return
    lines = read(host_root, f"{PCI}/{STRIX}/uma/carveout_options").splitlines()
    parsed = [OPTION.match(line) for line in lines]
    assert all(parsed) and 1 < len(lines) <= 19
    indexes = [int(m[1]) for m in parsed if m]
    sizes = [int(m[3]) * (1024 if m[4] == "GB" else 1) for m in parsed if m]
    assert len(set(indexes)) == len(indexes) and len(set(sizes)) == len(sizes)
    assert sizes[0] == 512 and max(sizes) == 96 * 1024
    assert "1:  (1 GB)" in lines
    assert int(read(host_root, f"{PCI}/{STRIX}/uma/carveout")) in indexes
    assert re.fullmatch(r"\d+\n", read(host_root, f"{PCI}/{STRIX}/mem_info_vram_total"))


def test_host_json(host_root: Path) -> None:
    data = json.loads(read(host_root, ".magicstick-sim/host.json"))
    assert data["scenario"] == host_root.name
    assert data["physical_ram_mib"] > 0
    assert isinstance(data["units"], dict)
    assert data["driver_after_boot"] in ("ready", "late", "never")
    assert data["companion_after_boot"] in ("ready", "late", "never")
    assert data["faults"] == []
    assert data["boot_id"] + "\n" == read(host_root, "proc/sys/kernel/random/boot_id")


@pytest.mark.parametrize("name", NAMES)
def test_deterministic(name: str, tmp_path: Path) -> None:
    create_host(name, tmp_path / "a")
    create_host(name, tmp_path / "b")
    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")
    assert sorted(os.listdir(tmp_path)) == ["a", "b"]  # no temporary leftovers
