"""Scenario → plan: `sim create` + inspect gives the plan operations.md prescribes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.inspect.conftest import inspect_valid

N26 = {"linux-generic": "7.0.0-31.31"}
N24 = {"linux-generic-hwe-24.04": "7.0.0-31.31~24.04.1"}
NONE: dict[str, str] = {}

# scenario: (state, packages, rebootRequired, experiment engineValidationAvailable or None,
#            gpuMemory supported)
EXPECTED = {
    "strix-halo-ubuntu-26.04-old-kernel": ("available", N26, True, None, False),
    "strix-halo-ubuntu-24.04-hwe-6.17": ("available", N24, True, None, False),
    "strix-halo-ubuntu-26.04-ready": ("ready", NONE, False, None, True),
    "strix-halo-ubuntu-24.04-ready": ("ready", NONE, False, None, True),
    "strix-halo-ubuntu-26.04-no-uma": ("ready", NONE, False, None, False),
    "strix-halo-ubuntu-26.04-driver-failing": ("blocked", NONE, False, None, False),
    "strix-halo-ubuntu-26.04-driver-unbound": ("blocked", NONE, False, None, False),
    "strix-halo-ubuntu-26.04-carveout-pending": ("ready", NONE, False, None, False),
    "strix-halo-ubuntu-26.04-foreign-ttm": ("ready", NONE, False, None, False),
    "strix-halo-ubuntu-26.04-memory-configured": ("ready", NONE, False, None, True),
    "strix-halo-nvidia-ubuntu-26.04-old-kernel": ("blocked", NONE, False, True, False),
    "strix-halo-nvidia-ubuntu-26.04-ready": ("blocked", NONE, False, True, True),
    "strix-halo-nvidia-unbound-ubuntu-26.04-ready": ("blocked", NONE, False, True, False),
    "strix-halo-second-amd-ubuntu-26.04-old-kernel": ("blocked", NONE, False, False, False),
    "strix-halo-second-amd-ubuntu-26.04-ready": ("blocked", NONE, False, False, False),
    "nvidia-datacenter-ubuntu-24.04": ("not-required", NONE, False, None, False),
    "cpu-only-ubuntu-24.04": ("not-required", NONE, False, None, False),
    "intel-only-ubuntu-24.04": ("not-required", NONE, False, None, False),
    "strix-halo-debian-13": ("blocked", NONE, False, None, False),
    "strix-halo-pci-missing-class": ("blocked", NONE, False, None, False),
    "strix-halo-pci-missing-vendor": ("blocked", NONE, False, None, False),
}


def test_the_table_covers_every_scenario(sim_roots: dict[str, Path]) -> None:
    assert set(EXPECTED) == set(sim_roots)


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_scenario_gives_the_expected_plan(scenario: str, sim_roots: dict[str, Path]) -> None:
    state, packages, reboot, experiment, memory = EXPECTED[scenario]
    doc = inspect_valid(sim_roots[scenario])
    plan = doc["plan"]
    assert (plan["state"], plan["packages"], plan["rebootRequired"]) == (state, packages, reboot)
    if experiment is None:
        assert "experiment" not in plan
    else:
        assert plan["experiment"]["engineValidationAvailable"] is experiment
        assert plan["experiment"]["experimentMode"] is True
        assert plan["experiment"]["id"] != plan["id"]
        # the experiment is the same shipped package plan, shown with the full GPU list
        assert plan["experiment"]["displayGpus"] == plan["displayGpus"]
        assert len(plan["displayGpus"]) >= 2
    assert doc["gpuMemory"]["supported"] is memory
    if state in ("available", "ready") or experiment is not None:
        assert "prepare-gpu" in doc["actions"]
    else:
        assert "prepare-gpu" not in doc["actions"]


def test_the_old_kernel_plan_is_exactly_the_reviewed_pin(sim_roots: dict[str, Path]) -> None:
    plan = inspect_valid(sim_roots["strix-halo-ubuntu-26.04-old-kernel"])["plan"]
    assert plan["packages"] == {"linux-generic": "7.0.0-31.31"}
    assert plan["targetKernel"] == "7.0.0-31-generic"
    assert plan["profileId"] == "strix-halo-ubuntu-26.04" and plan["profileVersion"] == 1


def test_an_unknown_os_gets_no_experiment(sim_roots: dict[str, Path]) -> None:
    plan = inspect_valid(sim_roots["strix-halo-debian-13"])["plan"]
    assert plan["state"] == "blocked" and "experiment" not in plan


def test_the_same_host_gives_the_same_plan_id(sim_roots: dict[str, Path]) -> None:
    root = sim_roots["strix-halo-ubuntu-26.04-old-kernel"]
    assert inspect_valid(root)["plan"]["id"] == inspect_valid(root)["plan"]["id"]


def test_a_new_boot_gives_a_new_plan_id(tmp_path: Path) -> None:
    from magicstick_host.sim.boot import boot_host
    from magicstick_host.sim.writer import create_host

    create_host("strix-halo-ubuntu-26.04-old-kernel", tmp_path / "h")
    before = inspect_valid(tmp_path / "h")["plan"]["id"]
    boot_host(tmp_path / "h")
    assert inspect_valid(tmp_path / "h")["plan"]["id"] != before
