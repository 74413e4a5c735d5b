"""The report policy: publish gate, size cap, write throttle, the dashboard's freshness rules."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

import pytest

from magicstick_host import schemas
from magicstick_host.domain import report_policy as rp

UID = "0f6d1f8e-2b0a-4c55-9a53-3b8f0c3c9e11"
BOOT = "5a1c2b1e-1d6f-4a4e-8f0e-8a3a5f1f0b77"
KERNEL = "6.17.0-1012-oem"
T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
HEX = "ab" * 32


def z(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def node(boot: str = BOOT, kernel: str = KERNEL, uid: str = UID) -> dict[str, Any]:
    return {"metadata": {"name": "box", "uid": uid},
            "status": {"nodeInfo": {"bootID": boot, "kernelVersion": kernel}}}


def report(observed: datetime = T0, *, big: bool = False) -> dict[str, Any]:
    """A schema-valid report; `big` is the largest realistic one (contract.md maxima)."""
    msg = ("x" * 2048) if big else "Ready to prepare the GPU."
    n_opts = 19 if big else 2
    label = ("Carve-out {i}: {gib} GiB dedicated VRAM, remaining system memory shared "
             "dynamically with the GPU through GTT (experimental)") if big else "{gib} GiB"
    plan: dict[str, Any] = {
        "state": "available",
        "message": msg,
        "profileId": "amd-strix-halo-ubuntu-26.04",
        "profileVersion": "3",
        "gpuProfile": "strix-halo",
        "experimental": False,
        "packages": ({f"package-with-a-long-name-{i}": f"1:{i}.2.3-0ubuntu1~26.04.1"
                      for i in range(40)} if big else {"amdgpu-dkms": "1:6.16.6-2255209.24.04"}),
        "targetKernel": KERNEL,
        "rebootRequired": True,
        "displayGpus": ["1002:1586", "1002:150e", "10de:2684"] if big else ["1002:1586"],
        "id": HEX,
    }
    if big:
        plan["experiment"] = {
            **{k: v for k, v in plan.items() if k != "packages"},
            "id": "cd" * 32, "experimental": True, "experimentMode": True,
            "engineValidationAvailable": True,
            "packages": {f"experimental-package-{i}": f"7.{i}.0-1" for i in range(20)},
        }
    return {
        "schemaVersion": 1,
        "observedAt": z(observed),
        "nodeUid": UID,
        "bootId": BOOT,
        "kernel": KERNEL,
        "plan": plan,
        "actions": ["prepare-gpu", "configure-gpu-memory", "reboot", "poweroff"],
        "gpuMemory": {
            "supported": True,
            "message": msg,
            "pciAddress": "0000:c5:00.0",
            "options": [{"index": i, "label": label.format(i=i, gib=2 ** (i % 8)),
                         "sizeMi": 512 * (i + 1)} for i in range(n_opts)],
            "currentCarveoutIndex": 1,
            "currentCarveoutMi": 1024,
            "currentDynamicLimitMi": 65536,
            "systemMemoryMi": 131072,
            "systemReserveMi": 16384,
            "stepMi": 1024,
            "minDynamicLimitMi": 1024,
            "id": "ef" * 32,
        },
        "modelCache": {
            "supported": False, "blocked": False, "reclaimableBytes": 0, "caches": [],
            "totalBytes": 0, "freeBytes": 0, "message": msg, "id": "12" * 32,
        },
        "network": {"supported": False, "message": msg, "interfaces": [], "id": "34" * 32},
        "operation": ({"requestId": "0" * 32, "action": "prepare-gpu", "phase": "Applying",
                       "message": msg, "updatedAt": z(observed)} if big else {}),
    }


# -- the schema ---------------------------------------------------------------------------------


def test_small_and_largest_reports_are_schema_valid() -> None:
    assert schemas.errors("report", report()) == []
    assert schemas.errors("report", report(big=True)) == []


def test_schema_allows_optional_extras_and_requires_the_contract_fields() -> None:
    extra = report()
    extra["modelCache"]["bytes"] = 0
    extra["futureField"] = {"anything": True}
    assert schemas.errors("report", extra) == []
    for field in ("kernel", "modelCache", "network"):
        missing = report()
        del missing[field]
        assert any(field in e for e in schemas.errors("report", missing))
    bad_op = report()
    bad_op["operation"] = {"phase": "Applying"}
    assert schemas.errors("report", bad_op) != []


# -- publish gate -------------------------------------------------------------------------------


def test_may_publish_only_when_the_node_reports_this_boot_and_kernel() -> None:
    assert rp.may_publish(node(), BOOT, KERNEL) == (True, "the Node reports this boot")
    ok, why = rp.may_publish(node(boot="old-boot"), BOOT, KERNEL)
    assert not ok and "boot ID" in why
    ok, why = rp.may_publish(node(kernel="6.8.0-1-generic"), BOOT, KERNEL)
    assert not ok and "kernel" in why
    ok, _ = rp.may_publish({"metadata": {}}, BOOT, KERNEL)
    assert not ok
    ok, _ = rp.may_publish(node(), "", KERNEL)
    assert not ok


# -- size ----------------------------------------------------------------------------------------


def test_encoding_is_compact_sorted_json() -> None:
    value = rp.encode_report(report())
    assert value == json.dumps(report(), sort_keys=True, separators=(",", ":"))
    assert ": " not in value and ", " not in value


def test_the_largest_realistic_report_fits_without_trimming() -> None:
    big = report(big=True)
    value = rp.encode_report(big)
    assert len(value) <= rp.MAX_REPORT_CHARS
    assert json.loads(value) == big  # nothing was dropped
    assert len(value) < rp.MAX_REPORT_CHARS * 3 // 4  # comfortable margin


def test_oversize_report_drops_optional_bulk_in_order_without_mutating_input() -> None:
    big = report(big=True)
    full = len(rp.encode(big))
    # 1. the experiment message goes first
    value = rp.encode_report(big, max_chars=full - 1000)
    out = json.loads(value)
    assert out["plan"]["experiment"]["message"] == ""
    assert out["gpuMemory"]["options"][0]["label"] != ""
    assert big["plan"]["experiment"]["message"] == "x" * 2048  # input untouched
    # 2. then the option labels
    out = json.loads(rp.encode_report(big, max_chars=full - 3500))
    assert all(o["label"] == "" for o in out["gpuMemory"]["options"])
    assert out["operation"]["message"] == "x" * 2048
    # 3. then long messages are cut; plan.message is kept
    value = rp.encode_report(big, max_chars=full - 7000)
    out = json.loads(value)
    assert len(out["operation"]["message"]) == rp.CUT_MESSAGE_CHARS
    assert out["plan"]["message"] == "x" * 2048
    assert schemas.errors("report", out) == []
    with pytest.raises(rp.ReportTooLargeError):
        rp.encode_report(big, max_chars=1000)


# -- throttle ------------------------------------------------------------------------------------


def test_should_write_on_change_or_after_a_minute() -> None:
    assert rp.should_write(None, None, "a", T0)
    assert rp.should_write("a", T0, "b", T0 + timedelta(seconds=1))
    assert not rp.should_write("a", T0, "a", T0 + timedelta(seconds=59.9))
    assert rp.should_write("a", T0, "a", T0 + timedelta(seconds=60))
    assert rp.should_write("a", T0, "a", T0 - timedelta(seconds=5))  # clock went back
    assert not rp.should_write("a", 100.0, "a", 130.0)  # float seconds work too
    assert rp.should_write("a", 100.0, "a", 160.0)


def test_an_idle_hour_writes_about_once_a_minute_and_never_goes_stale() -> None:
    """Ticks every 15-20 s (timer: 15 s after the previous run), content unchanged."""
    rng = random.Random(1234)
    now = T0
    digest: str | None = None
    written_at: datetime | None = None
    published: str | None = None
    writes: list[datetime] = []
    n = node()
    # the dashboard polls every second; freshness must never lapse after the first write
    lapses = 0
    next_tick = now
    t = now
    end = T0 + timedelta(hours=1)
    while t < end:
        if t >= next_tick:
            content = "same-digest"
            if rp.should_write(digest, written_at, content, t):
                published = rp.encode_report(report(observed=t))
                digest, written_at = content, t
                writes.append(t)
            next_tick = t + timedelta(seconds=15 + rng.uniform(0, 5))
        if published is not None:
            fresh, _ = rp.dashboard_considers_fresh(published, n, t)
            lapses += 0 if fresh else 1
        t += timedelta(seconds=1)
    gaps = [(b - a).total_seconds() for a, b in pairwise(writes)]
    assert 45 <= len(writes) <= 61, len(writes)
    assert min(gaps) >= 60
    assert max(gaps) <= 81  # well inside the dashboard's 180 s
    assert lapses == 0


# -- the dashboard's freshness rules -------------------------------------------------------------


def test_dashboard_freshness_rules() -> None:
    value = rp.encode_report(report())
    n = node()
    assert rp.dashboard_considers_fresh(value, n, T0) == (True, "fresh")
    assert rp.dashboard_considers_fresh(value, n, T0 + timedelta(seconds=180))[0]
    assert not rp.dashboard_considers_fresh(value, n, T0 + timedelta(seconds=181))[0]
    assert rp.dashboard_considers_fresh(value, n, T0 - timedelta(seconds=30))[0]
    assert not rp.dashboard_considers_fresh(value, n, T0 - timedelta(seconds=31))[0]
    assert not rp.dashboard_considers_fresh(value, node(uid="other"), T0)[0]
    assert not rp.dashboard_considers_fresh(value, node(boot="other"), T0)[0]
    ok, why = rp.dashboard_considers_fresh(value, node(kernel="other"), T0)
    assert not ok and "kernel" in why
    wrong_version = dict(report(), schemaVersion=2)
    assert not rp.dashboard_considers_fresh(rp.encode(wrong_version), n, T0)[0]
    local_time = dict(report(), observedAt="2026-11-30T12:00:00+01:00")
    assert not rp.dashboard_considers_fresh(rp.encode(local_time), n, T0)[0]
    padded = value + " " * (rp.MAX_REPORT_CHARS - len(value) + 1)
    assert not rp.dashboard_considers_fresh(padded, n, T0)[0]
    assert not rp.dashboard_considers_fresh("not json", n, T0)[0]


@pytest.mark.parametrize("value", ["[" * 30000, '{"a":' * 5000 + "1" + "}" * 5000,
                                   '{"schemaVersion": NaN}', '"\\ud800"'])
def test_a_hostile_annotation_is_not_fresh_and_never_an_exception(value: str) -> None:
    fresh, why = rp.dashboard_considers_fresh(value, node(), T0)
    assert not fresh and why.startswith("the report is not JSON"), why


def test_the_largest_report_is_read_back_within_the_decoders_bounds() -> None:
    value = rp.encode_report(report(big=True))
    assert rp.dashboard_considers_fresh(value, node(), T0) == (True, "fresh")
