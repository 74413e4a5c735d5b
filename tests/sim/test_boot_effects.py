"""What a simulated boot changes: carve-out, MemTotal, TTM, drivers, /run, cloud-init."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from magicstick_host.sim.boot import boot_host
from magicstick_host.sim.drivers import companion_binds, driver_comes_up, has_gfx1151_fixes
from magicstick_host.sim.runner import SimRunner
from magicstick_host.sim.writer import load_host, write_host
from tests.sim.effects_helpers import (
    PREPARE_26,
    TARGET,
    edit,
    gfx_targets,
    make,
    mem_total_kib,
    playbook,
    render_minor_of_gfx,
    vram_total,
)
from tests.sim.helpers import PCI, STRIX, read

MIB = 1024 * 1024
NVIDIA = "0000:01:00.0"
PAGES = "sys/module/ttm/parameters/pages_limit"


def driver(root: Path, addr: str) -> str | None:
    link = root / PCI / addr / "driver"
    return os.path.basename(os.readlink(link)) if link.is_symlink() else None


def is_active(root: Path, unit: str) -> tuple[int, str]:
    result = SimRunner(root).run(["systemctl", "is-active", unit], timeout=5)
    return result.returncode, result.stdout.strip()


def test_pending_carveout_becomes_active(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-carveout-pending", tmp_path)
    assert read(root, f"{PCI}/{STRIX}/uma/carveout") == "9\n"
    assert vram_total(root) == 512 * MIB
    before = mem_total_kib(root)
    boot_host(root)
    assert vram_total(root) == 32768 * MIB
    assert before - mem_total_kib(root) == (32768 - 512) * 1024
    assert read(root, f"{PCI}/{STRIX}/uma/carveout") == "9\n"
    # the TTM default follows the new MemTotal (half of it, in 4 KiB pages)
    assert int(read(root, PAGES)) == mem_total_kib(root) // 4 // 2


def test_worker_write_to_carveout_is_taken_at_boot(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-carveout-pending", tmp_path)
    (root / PCI / STRIX / "uma/carveout").write_text("1\n")  # as the worker writes it
    before = mem_total_kib(root)
    boot_host(root)
    assert vram_total(root) == 1024 * MIB
    assert before - mem_total_kib(root) == 512 * 1024


def test_managed_file_sets_ttm_at_boot_and_removal_restores_the_default(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-foreign-ttm", tmp_path)
    boot_host(root)
    assert read(root, PAGES) == f"{120 * 262144}\n"
    (root / "etc/modprobe.d/amdgpu-llm.conf").unlink()
    (root / "etc/modprobe.d/90-magicstick-ttm.conf").write_text(
        "# managed by magicstick-host: test\noptions ttm pages_limit=8388608 "
        "page_pool_size=8388608\n")
    boot_host(root)
    assert read(root, PAGES) == "8388608\n"
    (root / "etc/modprobe.d/90-magicstick-ttm.conf").unlink()
    boot_host(root)
    assert int(read(root, PAGES)) == mem_total_kib(root) // 4 // 2


def test_last_ttm_option_wins_and_cmdline_comes_last(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-memory-configured", tmp_path)
    (root / "etc/modprobe.d/zz-later.conf").write_text(
        "options ttm \\\n  pages_limit=4194304 page_pool_size=4194304\n")
    boot_host(root)
    assert read(root, PAGES) == "4194304\n"
    edit(root, cmdline_args="ro quiet splash ttm.pages_limit=2097152")
    boot_host(root)
    assert read(root, PAGES) == "2097152\n"
    assert read(root, "sys/module/ttm/parameters/page_pool_size") == "4194304\n"


def test_run_modprobe_files_do_not_survive_a_boot(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-ready", tmp_path)
    (root / "run/modprobe.d").mkdir(parents=True)
    (root / "run/modprobe.d/x.conf").write_text("options ttm pages_limit=262144\n")
    boot_host(root)
    assert not (root / "run/modprobe.d/x.conf").exists()
    assert int(read(root, PAGES)) == mem_total_kib(root) // 4 // 2


def test_run_is_cleared_and_cloud_init_runs_again(tmp_path: Path) -> None:
    root = make("strix-halo-nvidia-ubuntu-26.04-old-kernel", tmp_path)
    playbook(root, "prepare.yml", PREPARE_26)
    SimRunner(root).run(["shutdown", "-r", "+1", "magicstick"], timeout=5)
    edit(root, cloud_init=load_host(root).cloud_init.__class__(state="running"))
    assert (root / "run/systemd/shutdown/scheduled").exists()
    assert (root / "run/reboot-required").exists()
    old = read(root, "proc/sys/kernel/random/boot_id")
    new = boot_host(root)
    assert read(root, "proc/sys/kernel/random/boot_id") == new + "\n" != old
    assert not (root / "run/systemd/shutdown/scheduled").exists()
    assert not (root / "run/reboot-required").exists()
    assert not (root / "run/reboot-required.pkgs").exists()
    assert (root / "run/nvidia-persistenced/socket").exists()
    assert (root / "run/cloud-init/result.json").exists()
    assert load_host(root).cloud_init.state == "done"


@pytest.mark.parametrize(("release", "fixed"), [
    ("7.0.0-31-generic", True), ("6.18.4-061804-generic", True), ("6.18.3-1-generic", False),
    ("6.17.0-14-generic", False), ("6.8.0-85-generic", False), ("6.14.0-1018-oem", True),
    ("6.14.0-1017-oem", False), ("6.14.0-33-generic", False), ("6.12.48+deb13-amd64", False),
])
def test_gfx1151_fixes(release: str, fixed: bool) -> None:
    assert has_gfx1151_fixes(release) is fixed


def test_ready_driver_only_on_a_fixed_kernel(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-old-kernel", tmp_path)
    edit(root, kfd_nodes=[], dev_kfd=False)
    boot_host(root)  # still 6.17: left as it was
    assert gfx_targets(root) == [] and not (root / "dev/kfd").exists()
    playbook(root, "prepare.yml", PREPARE_26)
    boot_host(root)
    assert read(root, "proc/sys/kernel/osrelease") == TARGET + "\n"
    assert gfx_targets(root) == [0, 110501]
    assert render_minor_of_gfx(root, 110501) == 128
    assert driver(root, STRIX) == "amdgpu"
    assert (root / "dev/kfd").exists() and (root / "dev/dri/renderD128").exists()
    assert (root / "sys/class/drm/renderD128/device").resolve() == (root / PCI / STRIX).resolve()


def test_late_driver_comes_up_later(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-old-kernel", tmp_path)
    playbook(root, "prepare.yml", PREPARE_26)
    edit(root, driver_after_boot="late")
    boot_host(root)
    assert read(root, "proc/sys/kernel/osrelease") == TARGET + "\n"
    assert 110501 not in gfx_targets(root) and not (root / "dev/kfd").exists()
    assert driver(root, STRIX) is None and not (root / "dev/dri/renderD128").exists()
    assert vram_total_absent(root)
    driver_comes_up(root)
    assert driver(root, STRIX) == "amdgpu"
    assert 110501 in gfx_targets(root) and render_minor_of_gfx(root, 110501) == 128
    assert (root / "dev/kfd").exists() and (root / "dev/dri/renderD128").exists()
    assert vram_total(root) == 512 * MIB


def vram_total_absent(root: Path) -> bool:
    return not (root / PCI / STRIX / "mem_info_vram_total").exists()


def test_never_driver_stays_failing(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-old-kernel", tmp_path)
    playbook(root, "prepare.yml", PREPARE_26)
    edit(root, driver_after_boot="never")
    boot_host(root)
    assert driver(root, STRIX) == "amdgpu"
    assert 110501 not in gfx_targets(root) and not (root / "dev/kfd").exists()
    with pytest.raises(ValueError, match="never"):
        driver_comes_up(root)


@pytest.mark.parametrize("name", ["strix-halo-ubuntu-26.04-driver-failing",
                                  "strix-halo-ubuntu-26.04-driver-unbound"])
def test_a_reboot_does_not_repair_a_failing_driver(tmp_path: Path, name: str) -> None:
    root = make(name, tmp_path)
    before_driver = driver(root, STRIX)
    boot_host(root)
    assert driver(root, STRIX) == before_driver
    assert 110501 not in gfx_targets(root) and not (root / "dev/kfd").exists()


def test_second_amd_keeps_its_kfd_node(tmp_path: Path) -> None:
    root = make("strix-halo-second-amd-ubuntu-26.04-ready", tmp_path)
    edit(root, driver_after_boot="late")
    boot_host(root)
    assert gfx_targets(root) == [0, 120001] and (root / "dev/kfd").exists()
    driver_comes_up(root)
    assert sorted(gfx_targets(root)) == [0, 110501, 120001]
    assert render_minor_of_gfx(root, 110501) == 128


@pytest.mark.parametrize("mode", ["late", "never"])
def test_companion_after_boot(tmp_path: Path, mode: str) -> None:
    root = make("strix-halo-nvidia-ubuntu-26.04-ready", tmp_path)
    assert driver(root, NVIDIA) == "nvidia"
    edit(root, companion_after_boot=mode)
    boot_host(root)
    assert driver(root, NVIDIA) is None
    assert not (root / "sys/module/nvidia").exists() and not (root / "dev/nvidia0").exists()
    assert not (root / "run/nvidia-persistenced/socket").exists()
    assert is_active(root, "nvidia-persistenced") == (
        3, "activating" if mode == "late" else "failed")
    assert driver(root, STRIX) == "amdgpu" and 110501 in gfx_targets(root)
    if mode == "never":
        with pytest.raises(ValueError, match="never"):
            companion_binds(root)
        return
    companion_binds(root)
    assert driver(root, NVIDIA) == "nvidia"
    assert read(root, "sys/module/nvidia/version") == "580.95.05\n"
    assert (root / "run/nvidia-persistenced/socket").exists()
    assert is_active(root, "nvidia-persistenced") == (0, "active")


def test_unbound_companion_scenario_binds_on_request(tmp_path: Path) -> None:
    root = make("strix-halo-nvidia-unbound-ubuntu-26.04-ready", tmp_path)
    boot_host(root)
    assert driver(root, NVIDIA) is None
    companion_binds(root)
    assert driver(root, NVIDIA) == "nvidia"
    assert (root / "sys/class/drm/card2/device").resolve() == (root / PCI / NVIDIA).resolve()
    assert (root / "dev/dri/renderD129").exists() and (root / "dev/dri/renderD128").exists()


def test_ready_companion_brings_a_waiting_unit_up(tmp_path: Path) -> None:
    root = make("strix-halo-nvidia-unbound-ubuntu-26.04-ready", tmp_path)
    edit(root, companion_after_boot="ready")
    boot_host(root)
    assert driver(root, NVIDIA) == "nvidia"
    assert is_active(root, "nvidia-persistenced") == (0, "active")
    assert (root / "run/nvidia-persistenced/socket").exists()


def test_boot_is_a_function_of_the_tree(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    roots = [make("strix-halo-ubuntu-26.04-old-kernel", d) for d in (a, b)]
    for root in roots:
        host = load_host(root)
        host.driver_after_boot = "late"
        write_host(host, root)
        boot_host(root)
    from tests.sim.helpers import snapshot

    assert snapshot(roots[0]) == snapshot(roots[1])
