"""configure-gpu-memory: every support rule, and the selection validator's edges."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from magicstick_host.domain.evidence import (
    CarveoutOption,
    Evidence,
    MemoryInfo,
    OsInfo,
    PciInventory,
    TtmInfo,
    TtmOverride,
    UmaInfo,
    Unknown,
)
from magicstick_host.domain.gpu_memory.capability import (
    gpu_memory_capability,
    validate_memory_selection,
)
from magicstick_host.domain.limits import DEFAULT_LIMITS as L
from tests.domain.builders import MEM_TOTAL_MI, MIB, OPTIONS, REPO, host, nvidia, other_gpu, strix

_SCHEMA = json.loads((REPO / "magicstick_host/schemas/plan.schema.json").read_text())
VALIDATOR = Draft202012Validator({**_SCHEMA, "$ref": "#/$defs/gpuMemory"})
TTM = TtmInfo(module="ttm", pages_limit=65536 * 256, amdgpu_gttsize=-1)


def cap_json(ev: Evidence) -> dict[str, Any]:
    doc = gpu_memory_capability(ev, L).to_json()
    assert list(VALIDATOR.iter_errors(doc)) == []
    return doc


def test_supported_host() -> None:
    doc = cap_json(host())
    assert doc["supported"] is True, doc["message"]
    assert doc["pciAddress"] == "0000:c5:00.0"
    assert doc["options"][0] == {"index": 0, "label": "Minimum (512 MB)", "sizeMi": 512}
    assert doc["options"][1] == {"index": 1, "label": "(1 GB)", "sizeMi": 1024}
    assert doc["currentCarveoutIndex"] == 1 and doc["currentCarveoutMi"] == 1024
    assert doc["currentDynamicLimitMi"] == 65536 and doc["systemMemoryMi"] == MEM_TOTAL_MI
    assert (doc["systemReserveMi"], doc["stepMi"], doc["minDynamicLimitMi"]) == (16384, 1024, 1024)
    assert "suggestion" not in doc and "pendingCarveoutIndex" not in doc
    assert len(doc["id"]) == 64


@pytest.mark.parametrize(
    ("ev", "fragment"),
    [
        (host(version_id="25.10"), "not Ubuntu 24.04 or 26.04"),
        (host(os=OsInfo(id="debian", version_id="13")), "not Ubuntu"),
        (host(os=OsInfo(), unknowns=(Unknown("os", "missing"),)), "OS could not be identified"),
        (host(pci=PciInventory(devices=(strix(),), complete=False)), "incomplete"),
        (host(devices=()), "0 Strix Halo"),
        (host(devices=(strix(), strix(address="0000:c6:00.0"))), "2 Strix Halo"),
        (host(devices=(strix(driver=None),)), "not bound to amdgpu"),
        (host(devices=(strix(driver="vfio-pci"),)), "not bound to amdgpu (vfio-pci)"),
        (host(devices=(strix(), nvidia(driver=None))), "waiting for the companion driver"),
        (host(devices=(strix(), nvidia(driver="nouveau"))), "bound to nouveau"),
        (host(devices=(strix(), nvidia(driver="vfio-pci"))), "bound to vfio-pci"),
        (host(devices=(strix(), other_gpu("1002", "744c", driver="amdgpu"))), "second AMD"),
        (host(devices=(strix(), other_gpu("8086", "7d55", driver="i915"))), "Intel"),
        (host(devices=(strix(), other_gpu("1a03", "2000"))), "unknown vendor"),
        (host(devices=(strix(uma=None),)), "no reservation control"),
        (host(devices=(strix(uma=UmaInfo(None, 0)),)), "could not be parsed"),
        (host(devices=(strix(uma=UmaInfo((), 0)),)), "lists 0"),
        (
            host(devices=(strix(uma=UmaInfo((*OPTIONS, CarveoutOption(0, "dup", 5)), 0)),)),
            "repeat",
        ),
        (
            host(devices=(strix(uma=UmaInfo((*OPTIONS, CarveoutOption(12, "dup", 512)), 0)),)),
            "repeat",
        ),
        (
            host(devices=(strix(uma=UmaInfo((CarveoutOption(0, "zero", 0),), 0)),)),
            "invalid index or size",
        ),
        (host(devices=(strix(uma=UmaInfo(OPTIONS, 5)),)), "index 5 is not a listed"),
        (host(devices=(strix(uma=UmaInfo(OPTIONS, None)),)), "not a listed"),
        (host(devices=(strix(vram_total_bytes=None),)), "mem_info_vram_total"),
        (host(ttm=replace(TTM, module=None)), "unknown which TTM module"),
        (host(ttm=replace(TTM, module="amdttm")), "out-of-tree amdttm"),
        (host(ttm=replace(TTM, pages_limit=None)), "pages_limit could not be read"),
        (host(ttm=replace(TTM, amdgpu_gttsize=None)), "gttsize parameter could not be read"),
        (host(ttm=replace(TTM, amdgpu_gttsize=2048)), "amdgpu.gttsize is set"),
        (
            host(ttm=replace(TTM, overrides=(TtmOverride("/proc/cmdline", "ttm.pages_limit=1"),))),
            "competing override in /proc/cmdline",
        ),
        (
            host(ttm=replace(TTM, managed_file_present=True, managed_pages_limit=1024)),
            "does not match",
        ),
        (
            host(ttm=replace(TTM, managed_file_present=True, managed_pages_limit=None)),
            "does not match",
        ),
        (host(unknowns=(Unknown("ttm.overrides", "modprobe.d unreadable"),)), "unreadable"),
        (host(memory=MemoryInfo()), "MemTotal"),
        (host(unknowns=(Unknown("memory.mem_total_kib", "meminfo unreadable"),)), "MemTotal"),
        (
            host(unknowns=(Unknown("pci.devices.0000:c5:00.0.driver", "link unreadable"),)),
            "link unreadable",
        ),
    ],
)
def test_unsupported(ev: Evidence, fragment: str) -> None:
    doc = cap_json(ev)
    assert doc["supported"] is False
    assert fragment in doc["message"], doc["message"]
    assert "suggestion" not in doc
    assert doc["message"].startswith("GPU memory cannot be configured")


def test_unrelated_unknowns_do_not_block() -> None:
    ev = host(
        unknowns=(
            Unknown("os.codename", "no VERSION_CODENAME"),
            Unknown("memory.cgroup_limit_bytes", "cgroup unreadable"),
            Unknown("nvidia.persistenced_active", "systemctl failed"),
        )
    )
    assert cap_json(ev)["supported"] is True


def test_managed_file_matching_is_fine() -> None:
    ev = host(ttm=replace(TTM, managed_file_present=True, managed_pages_limit=65536 * 256))
    assert cap_json(ev)["supported"] is True


def test_nvidia_companion_bound_is_supported() -> None:
    assert cap_json(host(devices=(strix(), nvidia())))["supported"] is True


def test_pending_firmware_change() -> None:
    ev = host(devices=(strix(uma=UmaInfo(OPTIONS, 9)),))
    doc = cap_json(ev)
    assert doc["supported"] is False
    assert "pending a restart" in doc["message"]
    assert doc["pendingCarveoutIndex"] == 9
    assert doc["currentCarveoutIndex"] == 1 and doc["currentCarveoutMi"] == 1024


def test_suggestion_when_the_limit_exceeds_the_reservation() -> None:
    ev = host(ttm=replace(TTM, pages_limit=126976 * 256))
    doc = cap_json(ev)
    assert doc["supported"] is True
    allowed = ((MEM_TOTAL_MI - 16384) // 1024) * 1024
    assert doc["suggestion"] == {"carveoutIndex": 1, "dynamicLimitMi": allowed}
    assert f"{allowed} MiB" in doc["message"]
    ok = validate_memory_selection(gpu_memory_capability(ev, L), 1, allowed, L)
    assert ok.ok and ok.limit_changes and not ok.carveout_changes


def test_id_changes_with_memory_and_boot_but_is_stable() -> None:
    base = cap_json(host())["id"]
    assert cap_json(host())["id"] == base
    assert cap_json(host(boot_id="other"))["id"] != base
    assert cap_json(host(memory=MemoryInfo(mem_total_kib=1024 * 100000)))["id"] != base
    assert cap_json(host(ttm=replace(TTM, pages_limit=1024 * 256)))["id"] != base
    assert cap_json(host(release="7.0.0-31-generic"))["id"] != base
    assert (
        cap_json(host(devices=(strix(vram_total_bytes=2048 * MIB, uma=UmaInfo(OPTIONS, 2)),)))["id"]
        != base
    )


# ---- selection ------------------------------------------------------------------------------

CAP = gpu_memory_capability(host(), L)
# current: index 1 (1024 MiB), limit 65536 MiB, MemTotal 130048 MiB
MAX_SAME = MEM_TOTAL_MI - 16384  # 113664: projected RAM unchanged with index 1


@pytest.mark.parametrize(
    ("index", "limit", "ok", "fragment"),
    [
        (1, 1023, False, "not a multiple of 1024"),
        (1, 1024, True, "valid"),
        (1, 1025, False, "not a multiple"),
        (1, 0, False, "below 1024"),
        (1, -1024, False, "below 1024"),
        (1, MAX_SAME, True, "valid"),
        (1, MAX_SAME + 1024, False, f"above the {MAX_SAME} MiB allowed"),
        (1, 65536, False, "already active"),
        (5, 4096, False, "option 5 is not offered"),
        (255, 4096, False, "not offered"),
        # a smaller reservation gives Linux more RAM: 130048 + 1024 - 512 - 16384 = 114176,
        # which is not step-aligned: the largest valid limit is 113664
        (0, 113664, True, "valid"),
        (0, 114688, False, "above the 114176 MiB allowed"),
        # 32 GiB reservation: projected = 130048 + 1024 - 32768 = 98304, max 81920
        (9, 81920, True, "valid"),
        (9, 82944, False, "above the 81920 MiB allowed"),
        (9, 65536, True, "1 restart"),
        (11, 16384, True, "2 restart"),
        (11, 16384 + 1024, False, "above"),
    ],
)
def test_selection(index: int, limit: int, ok: bool, fragment: str) -> None:
    result = validate_memory_selection(CAP, index, limit, L)
    assert result.ok is ok, result.message
    assert fragment in result.message


def test_selection_change_flags() -> None:
    both = validate_memory_selection(CAP, 11, 16384, L)
    assert both.carveout_changes and both.limit_changes
    assert both.new_carveout_mi == 98304 and both.projected_memory_mi == MEM_TOTAL_MI + 1024 - 98304
    only_carveout = validate_memory_selection(CAP, 9, 65536, L)
    assert only_carveout.carveout_changes and not only_carveout.limit_changes
    only_limit = validate_memory_selection(CAP, 1, 4096, L)
    assert only_limit.limit_changes and not only_limit.carveout_changes


def test_selection_rejected_when_unsupported() -> None:
    cap = gpu_memory_capability(host(devices=(strix(uma=UmaInfo(OPTIONS, 9)),)), L)
    result = validate_memory_selection(cap, 9, 4096, L)
    assert not result.ok and "pending a restart" in result.message
