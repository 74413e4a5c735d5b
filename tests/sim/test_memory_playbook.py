"""The memory playbook on simulated hosts: the managed TTM file, initramfs, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from magicstick_host.sim.boot import boot_host
from magicstick_host.sim.writer import load_host
from tests.sim.effects_helpers import TARGET, add_fault, effects, make, mem_total_kib, playbook
from tests.sim.helpers import read

READY = "strix-halo-ubuntu-26.04-ready"
CONF = "etc/modprobe.d/90-magicstick-ttm.conf"
PAGES = "sys/module/ttm/parameters/pages_limit"


def memory_vars(root: Path, limit_mi: int, running: str = TARGET) -> dict[str, object]:
    return {"magicstick_dynamic_limit_mi": limit_mi, "magicstick_running_kernel": running,
            "magicstick_mem_total_mi": mem_total_kib(root) // 1024}


def test_writes_the_managed_file_and_rebuilds_the_initramfs(tmp_path: Path) -> None:
    root = make(READY, tmp_path)
    default = read(root, PAGES)
    result = playbook(root, "memory.yml", memory_vars(root, 65536))
    assert result.returncode == 0, result.stdout
    assert "TASK [Write the managed TTM limit]" in result.stdout and "PLAY RECAP" in result.stdout
    text = read(root, CONF)
    assert text.startswith("# managed by magicstick-host: ")
    assert text.endswith("\noptions ttm pages_limit=16777216 page_pool_size=16777216\n")
    assert load_host(root).modprobe_files[CONF] == text
    (initramfs,) = effects(root, "initramfs")
    assert initramfs["argv"] == ["update-initramfs", "-u", "-k", TARGET]
    assert [e["playbook"] for e in effects(root, "playbook")] == ["memory.yml"]
    assert read(root, PAGES) == default  # amdgpu reads it at load: only a boot applies it
    boot_host(root)
    assert read(root, PAGES) == "16777216\n"
    assert read(root, "sys/module/ttm/parameters/page_pool_size") == "16777216\n"
    assert read(root, CONF) == text


def test_same_limit_again_still_rebuilds_the_initramfs(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-memory-configured", tmp_path)
    result = playbook(root, "memory.yml", memory_vars(root, 96 * 1024))
    assert result.returncode == 0 and "changed=1" in result.stdout
    assert len(effects(root, "initramfs")) == 1


@pytest.mark.parametrize(("limit", "running", "text"), [
    (120 * 1024, TARGET, "exceeds MemTotal"),
    (65536, "6.17.0-8-generic", "the running kernel is 7.0.0-31-generic"),
    (1000, TARGET, "not a positive multiple of 1024"),
])
def test_refusals_write_nothing(tmp_path: Path, limit: int, running: str, text: str) -> None:
    root = make(READY, tmp_path)
    result = playbook(root, "memory.yml", memory_vars(root, limit, running))
    assert result.returncode == 2
    assert "TASK [Check the request against this host]" in result.stdout
    assert "fatal: [localhost]: FAILED!" in result.stdout and text in result.stdout
    assert not (root / CONF).exists()
    assert effects(root, "initramfs") == []
    assert effects(root, "playbook")[0]["rc"] == 2


def test_limit_is_checked_against_the_actual_mem_total(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-carveout-pending", tmp_path)
    boot_host(root)  # 32 GB carve-out active: MemTotal about 93.5 GiB
    limit = 96 * 1024
    stale = {**memory_vars(root, limit), "magicstick_mem_total_mi": 127953}
    assert playbook(root, "memory.yml", stale).returncode == 2


def test_memory_playbook_fails(tmp_path: Path) -> None:
    root = make(READY, tmp_path)
    add_fault(root, "memory-playbook-fails")
    result = playbook(root, "memory.yml", memory_vars(root, 65536))
    assert result.returncode == 2 and "fatal: [localhost]: FAILED!" in result.stdout
    assert not (root / CONF).exists()
    assert load_host(root).faults == []
    assert [e["fault"] for e in effects(root, "fault")] == ["memory-playbook-fails"]
    assert playbook(root, "memory.yml", memory_vars(root, 65536)).returncode == 0
