"""configure-gpu-memory end to end on the real apiserver and a simulated Strix Halo host.

Counts per case (firmware writes, memory playbook runs, shutdowns):
carve-out + TTM 1/1/2; TTM only 0/1/1; carve-out only 1/0/1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from magicstick_host.sim.writer import load_host, write_host
from tests.harness.world import World

pytestmark = pytest.mark.apiserver

READY = "strix-halo-ubuntu-26.04-ready"
CONFIGURED = "strix-halo-ubuntu-26.04-memory-configured"  # the managed 96 GiB limit is active
STRIX = "0000:c5:00.0"


def configure(world: World, index: int, limit_mi: int, **overrides: Any) -> dict[str, Any]:
    cap = world.published()["gpuMemory"]
    spec: dict[str, Any] = {
        "planId": cap["id"],
        "allowExperimental": True,
        "gpuMemory": {"carveoutIndex": index, "dynamicLimitMi": limit_mi},
    }
    spec.update(overrides)
    return world.create_request("configure-gpu-memory", **spec)


def counts(world: World) -> tuple[int, int, int]:
    op = world.state().operation
    assert op is not None
    writes = sum(1 for s in op.steps if s.name == "write-carveout" and s.outcome == "done")
    return writes, len(world.playbooks("memory.yml")), len(world.effects("shutdown"))


def message(world: World) -> str:
    obj = world.hostop()
    assert obj is not None
    return str(obj["status"]["message"])


def active(world: World) -> tuple[int, int]:
    """(active carve-out MiB, active TTM limit MiB) as the booted simulated host shows them."""
    host = load_host(world.root)
    dev = host.device(STRIX)
    assert dev is not None and dev.vram_mib is not None
    pages = host.module("ttm").parameters.get("pages_limit")  # type: ignore[union-attr]
    limit = int(pages) // 256 if pages else host.default_ttm_pages() // 256
    return dev.vram_mib, limit


def test_carveout_and_limit_take_two_restarts(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, READY)
    configure(world, 9, 65536)
    assert world.drive() == "Succeeded"
    assert counts(world) == (1, 1, 2)
    assert active(world) == (32768, 65536)
    status = world.hostop()["status"]  # type: ignore[index]
    assert status["rebootsUsed"] == 2 and status["rebootBudget"] == 2
    conf = (world.root / "etc/modprobe.d/90-magicstick-ttm.conf").read_text()
    assert f"options ttm pages_limit={65536 * 256} page_pool_size={65536 * 256}" in conf


def test_limit_only_takes_one_restart(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, READY)
    configure(world, 0, 32768)
    assert world.drive() == "Succeeded"
    assert counts(world) == (0, 1, 1)
    assert active(world) == (512, 32768)


def test_carveout_only_when_the_limit_is_already_exact(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, CONFIGURED)
    current = world.published()["gpuMemory"]["currentDynamicLimitMi"]
    configure(world, 4, current)  # option 4: 4 GB
    assert world.drive() == "Succeeded"
    assert counts(world) == (1, 0, 1)
    assert active(world)[0] == 4096


def nothing_written(world: World) -> None:
    assert world.playbooks() == [] and world.effects("shutdown") == []
    assert load_host(world.root).device(STRIX).uma.selected == 0  # type: ignore[union-attr]


def test_a_stale_capability_id_is_rejected(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, READY)
    configure(world, 9, 65536, planId="e" * 64)
    world.tick()
    assert world.phase() == "Rejected" and "id differs" in message(world)
    nothing_written(world)


@pytest.mark.parametrize(
    ("index", "limit", "needle"),
    [
        (12, 65536, "above"),  # 96 GB reserved leaves too little for a 64 GiB limit
        (0, 63976 // 1024 * 1024 + 1024 * 60, "above"),
        (0, 1000, "multiple"),
    ],
)
def test_a_selection_over_the_reserve_or_off_step_is_rejected(
    tmp_path: Path, kube: Any, index: int, limit: int, needle: str
) -> None:
    world = World(tmp_path, kube, READY)
    configure(world, index, limit)
    world.tick()
    assert world.phase() == "Rejected" and needle in message(world)
    nothing_written(world)


def test_a_no_op_is_rejected(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, CONFIGURED)
    current = world.published()["gpuMemory"]["currentDynamicLimitMi"]
    configure(world, 0, current)
    world.tick()
    assert world.phase() == "Rejected" and "already active" in message(world)


@pytest.mark.parametrize(
    "scenario",
    [
        "strix-halo-ubuntu-26.04-foreign-ttm",
        "strix-halo-second-amd-ubuntu-26.04-ready",
    ],
)
def test_unsupported_hosts_are_rejected_with_nothing_written(
    tmp_path: Path, kube: Any, scenario: str
) -> None:
    world = World(tmp_path, kube, scenario)
    assert world.published()["gpuMemory"]["supported"] is False
    configure(world, 9, 65536)
    world.tick()
    assert world.phase() == "Rejected" and "not available" in message(world)
    assert world.playbooks() == [] and world.effects("shutdown") == []


def test_nouveau_on_the_companion_is_rejected(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, "strix-halo-nvidia-ubuntu-26.04-ready")
    host = load_host(world.root)
    for dev in host.pci:
        if dev.vendor == "10de" and dev.pci_class.startswith("03"):
            dev.driver = "nouveau"
    write_host(host, world.root)
    assert world.published()["gpuMemory"]["supported"] is False
    configure(world, 9, 65536)
    world.tick()
    assert world.phase() == "Rejected" and "nouveau" in message(world)


def test_a_late_companion_driver_is_waited_for(tmp_path: Path, kube: Any) -> None:
    from magicstick_host.sim import boot as sim_boot

    world = World(tmp_path, kube, "strix-halo-nvidia-ubuntu-26.04-ready")
    host = load_host(world.root)
    host.companion_after_boot = "late"
    write_host(host, world.root)
    configure(world, 9, 65536)
    for _ in range(5):
        world.tick()
        if load_host(world.root).shutdown is not None:
            world.boot()
            break
    world.tick()  # the new boot is observed: Verifying
    world.tick()  # the companion is not bound yet: waiting, nothing written
    assert world.phase() == "Verifying"
    assert "companion" in message(world)
    sim_boot.companion_binds(world.root)
    host = load_host(world.root)
    host.companion_after_boot = "ready"  # binds promptly after the second restart
    write_host(host, world.root)
    assert world.drive() == "Succeeded"
    assert counts(world) == (1, 1, 2)


def test_a_failed_carveout_write_is_failed_and_nothing_restarts(tmp_path: Path, kube: Any) -> None:
    from magicstick_host.sim import carveout_fault

    world = World(tmp_path, kube, READY)
    configure(world, 9, 65536)
    world.tick()  # accepted, Preparing
    carveout_fault.break_carveout_write(world.root)
    assert world.drive() == "Failed"
    assert "firmware memory choice failed" in message(world)
    assert world.effects("shutdown") == []


def test_a_failed_memory_playbook_is_failed_named_and_nothing_restarts(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, READY)
    host = load_host(world.root)
    host.faults.append("memory-playbook-fails")
    write_host(host, world.root)
    configure(world, 0, 32768)
    assert world.drive() == "Failed"
    assert "failed" in message(world) and ".log" in message(world)
    assert counts(world) == (0, 1, 0)
    assert not (world.root / "etc/modprobe.d/90-magicstick-ttm.conf").exists()


# -- the documented re-checks after each restart (operations.md, configure-gpu-memory) --------

MIXED = "strix-halo-nvidia-ubuntu-26.04-ready"


def companion_after_boot(world: World, mode: str) -> None:
    host = load_host(world.root)
    host.companion_after_boot = mode
    write_host(host, world.root)


def tick_until_restart(world: World) -> None:
    for _ in range(6):
        world.tick()
        if load_host(world.root).shutdown is not None:
            world.boot()
            return
    raise AssertionError("no restart was scheduled")


def test_nvidia_on_vfio_after_the_first_restart_stops_before_the_ttm_write(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, MIXED)
    companion_after_boot(world, "vfio-pci")
    configure(world, 9, 65536)
    assert world.drive() == "Failed"
    assert "vfio-pci" in message(world) and "10de:" in message(world)
    # the carve-out was written and restarted once; no TTM write and no second restart
    assert counts(world) == (1, 0, 1)
    assert not (world.root / "etc/modprobe.d/90-magicstick-ttm.conf").exists()


def test_nouveau_after_a_ttm_only_restart_is_failed_not_succeeded(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, MIXED)
    companion_after_boot(world, "nouveau")
    configure(world, 0, 32768)
    assert world.drive() == "Failed"
    assert "nouveau" in message(world)
    assert counts(world) == (0, 1, 1)


def test_a_different_unbound_nvidia_gpu_fails_at_once_without_the_companion_wait(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, MIXED)
    companion_after_boot(world, "late")
    configure(world, 9, 65536)
    tick_until_restart(world)
    host = load_host(world.root)
    swapped = next(d for d in host.pci if d.vendor == "10de" and d.pci_class.startswith("03"))
    swapped.device = "2c05"  # another NVIDIA GPU came back in that slot, not bound yet
    write_host(host, world.root)
    world.tick()  # the new boot is observed
    world.tick()  # no ten-minute wait: the hardware identity is checked before the driver
    assert world.phase() == "Failed"
    assert "10de:2c05" in message(world) and "not the one" in message(world)
    assert counts(world) == (1, 0, 1)
