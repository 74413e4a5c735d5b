from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from magicstick_host.domain.evidence import KfdNode, MemoryInfo, Unknown
from magicstick_host.domain.fingerprint import hardware_fingerprint
from magicstick_host.domain.readiness import amd_host_driver_ready
from tests.domain.builders import MIB, host, nvidia, strix


def test_ready_host_driver() -> None:
    ev = host()
    ready, reason = amd_host_driver_ready(ev, ev.pci.devices[0])
    assert ready, reason


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"device": strix(driver=None)}, "not bound to amdgpu"),
        ({"device": strix(driver="vfio-pci")}, "vfio-pci is bound"),
        ({"device": strix(render_nodes=())}, "no render node"),
        ({"kfd_nodes": (KfdNode(0, 0, 0),)}, "no KFD node with gfx target 110501"),
        ({"kfd_nodes": (KfdNode(1, 110501, 129),)}, "belongs to"),
        ({"kfd_nodes": (KfdNode(1, 110000, 128),)}, "no KFD node"),
        ({"kfd_nodes": (KfdNode(1, None, 128),)}, "no KFD node"),
        ({"kfd_nodes": (KfdNode(1, 110501, None),)}, "belongs to"),
        ({"dev_kfd": False}, "/dev/kfd is missing"),
        ({"device": nvidia()}, "not a Strix Halo"),
    ],
)
def test_driver_not_ready_says_why(change: dict[str, Any], expected: str) -> None:
    device = change.pop("device", strix())
    ev = host(**change)
    ready, reason = amd_host_driver_ready(ev, device)
    assert not ready
    assert expected in reason


def test_kfd_unknown_is_reported() -> None:
    ev = host(kfd_nodes=(), unknowns=(Unknown("kfd_nodes", "topology unreadable"),))
    ready, reason = amd_host_driver_ready(ev, strix())
    assert not ready and "topology unreadable" in reason


def test_render_node_must_be_this_devices() -> None:
    # renderD129 belongs to the NVIDIA card; a gfx1151 KFD node pointing there does not count
    ev = host(devices=(strix(), nvidia()), kfd_nodes=(KfdNode(1, 110501, 129),))
    assert not amd_host_driver_ready(ev, strix())[0]


def test_fingerprint_is_stable_and_ignores_drivers_and_memory() -> None:
    base = hardware_fingerprint(host())
    assert base is not None and len(base) == 64
    assert hardware_fingerprint(host()) == base
    same = [
        host(devices=(strix(driver=None),)),
        host(devices=(strix(vram_total_bytes=32768 * MIB, gtt_total_bytes=1),)),
        host(memory=MemoryInfo(mem_total_kib=1024)),
        host(release="7.0.0-31-generic", boot_id="other"),
    ]
    for ev in same:
        assert hardware_fingerprint(ev) == base


@pytest.mark.parametrize(
    "ev",
    [
        host(cpu_model="AMD RYZEN AI MAX 390"),
        host(dmi_vendor="HP"),
        host(dmi_product="Z2 Mini G1a"),
        host(arch="aarch64"),
        host(devices=(strix(address="0000:c6:00.0"),)),
        host(devices=(strix(revision="c2"),)),
        host(devices=(strix(subsystem_vendor="103c"),)),
        host(devices=(strix(subsystem_device="8d1d"),)),
        host(devices=(strix(pci_class="030000"),)),
        host(devices=(strix(), nvidia())),
    ],
)
def test_fingerprint_changes_with_hardware(ev: object) -> None:
    assert hardware_fingerprint(ev) != hardware_fingerprint(host())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "ev",
    [
        host(cpu_model=None),
        host(dmi_vendor=None),
        host(dmi_product=None),
        host(arch=None),
        host(devices=(strix(revision=None),)),
        host(devices=(strix(subsystem_vendor=None),)),
        host(unknowns=(Unknown("cpu_model", "unreadable"),)),
        host(unknowns=(Unknown("pci.devices", "unreadable"),)),
    ],
)
def test_fingerprint_unknown_inputs_give_none(ev: object) -> None:
    assert hardware_fingerprint(ev) is None  # type: ignore[arg-type]


def test_fingerprint_needs_complete_inventory() -> None:
    ev = host()
    assert hardware_fingerprint(replace(ev, pci=replace(ev.pci, complete=False))) is None
