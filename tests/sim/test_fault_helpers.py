"""Sysfs write faults, the effects log, and the small parsers behind the effects."""

from __future__ import annotations

from pathlib import Path

import pytest

from magicstick_host.domain.versions import compare_versions
from magicstick_host.ports.hostfs import HostReadError, RootedHostFS
from magicstick_host.sim.boot import boot_host
from magicstick_host.sim.carveout_fault import break_carveout_write, repair_carveout_write
from magicstick_host.sim.modprobe import effective_files, module_options
from magicstick_host.sim.runner import EFFECTS_LOG, SimRunner, read_effects
from magicstick_host.sim.writer import load_host
from tests.sim.effects_helpers import make, vram_total
from tests.sim.helpers import PCI, STRIX, read

CARVEOUT = f"{PCI}/{STRIX}/uma/carveout"
MIB = 1024 * 1024


def test_broken_carveout_write_fails_with_eisdir(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-ready", tmp_path)
    break_carveout_write(root, how="directory")
    with pytest.raises(IsADirectoryError):
        (root / CARVEOUT).write_text("9\n")
    assert "carveout-write" in load_host(root).faults
    boot_host(root)  # the simulator leaves the broken attribute alone, boots included
    assert (root / CARVEOUT).is_dir()
    assert vram_total(root) == 512 * MIB
    repair_carveout_write(root)
    assert read(root, CARVEOUT) == "0\n"
    (root / CARVEOUT).write_text("9\n")
    boot_host(root)
    assert vram_total(root) == 32768 * MIB
    assert "carveout-write" not in load_host(root).faults


def test_immutable_carveout_reads_but_does_not_write(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-carveout-pending", tmp_path)
    break_carveout_write(root)  # needs CAP_LINUX_IMMUTABLE, as the end-to-end fault test does
    try:
        assert read(root, CARVEOUT) == "9\n"
        with pytest.raises(PermissionError):
            (root / CARVEOUT).write_text("1\n")
        fs = RootedHostFS(str(root))  # the worker's own port: reads fine, the write fails
        assert fs.read_text(f"/sys/bus/pci/devices/{STRIX}/uma/carveout") == "9\n"
        with pytest.raises(HostReadError, match="permission denied"):
            fs.write_value(f"/sys/bus/pci/devices/{STRIX}/uma/carveout", "1\n")
        boot_host(root)
        assert vram_total(root) == 32768 * MIB  # the earlier selection still applies
        assert read(root, CARVEOUT) == "9\n"
    finally:
        repair_carveout_write(root)
    (root / CARVEOUT).write_text("1\n")
    assert load_host(root).faults == []


def test_no_carveout_control_to_break(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-no-uma", tmp_path)
    with pytest.raises(FileNotFoundError):
        break_carveout_write(root)


def test_effects_log_format_is_unchanged(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-ready", tmp_path)
    runner = SimRunner(root)
    assert runner.run(["shutdown", "-r", "+1", "magicstick: reboot"], timeout=5).returncode == 0
    assert runner.run(["shutdown", "-c"], timeout=5).returncode == 0
    assert EFFECTS_LOG == ".magicstick-sim/effects.jsonl"
    first, second = read_effects(root)
    assert first == {"effect": "shutdown", "argv": ["shutdown", "-r", "+1", "magicstick: reboot"],
                     "bootId": load_host(root).boot_id, "bootCount": 0}
    assert second["effect"] == "shutdown-cancelled"


def test_shutdown_fault_stays(tmp_path: Path) -> None:
    from tests.sim.effects_helpers import add_fault

    root = make("strix-halo-ubuntu-26.04-ready", tmp_path)
    add_fault(root, "shutdown")
    runner = SimRunner(root)
    for _ in range(2):
        assert runner.run(["shutdown", "-r", "+1"], timeout=5).returncode == 1
    assert load_host(root).faults == ["shutdown"]
    assert not (root / "run/systemd/shutdown/scheduled").exists()


def test_modprobe_order_and_shadowing() -> None:
    files = {
        "usr/lib/modprobe.d/50-a.conf": "options ttm pages_limit=1\n",
        "etc/modprobe.d/50-a.conf": "options ttm pages_limit=2\n",  # hides the /usr/lib one
        "etc/modprobe.d/10-b.conf": "options ttm pages_limit=3 page_pool_size=3\n",
        "etc/modprobe.d/99-c.conf.disabled": "options ttm pages_limit=4\n",
        "etc/modprobe.d/60-d.conf": "# options ttm pages_limit=5\noptions amd-ttm x=1\n",
    }
    assert [p for p, _ in effective_files(files)] == [
        "etc/modprobe.d/10-b.conf", "etc/modprobe.d/50-a.conf", "etc/modprobe.d/60-d.conf"]
    assert module_options(files, "ro quiet", "ttm") == {"pages_limit": "2", "page_pool_size": "3"}
    assert module_options(files, "ttm.page_pool_size=7", "ttm")["page_pool_size"] == "7"
    assert module_options(files, "", "amd_ttm") == {"x": "1"}


@pytest.mark.parametrize(("a", "b", "sign"), [
    ("7.0.0-31.31", "6.17.0-8.8", 1), ("7.0.0-31.31~24.04.1", "7.0.0-31.31", -1),
    ("7.0.0-31.31~24.04.2", "7.0.0-31.31~24.04.1", 1), ("1:1.0", "2.0", 1), ("1.0", "1.0", 0),
    ("2.42-0ubuntu3", "2.42-0ubuntu10", -1), ("1.0a", "1.0", 1), ("1.0", "1.0.1", -1),
    ("1.0~rc1", "1.0", -1), ("580.95.05-0ubuntu1", "580.95.05-0ubuntu0.24.04.2", 1),
])
def test_debian_versions(a: str, b: str, sign: int) -> None:
    result = compare_versions(a, b)
    assert (result > 0) - (result < 0) == sign
    back = compare_versions(b, a)
    assert (back > 0) - (back < 0) == -sign
