"""Scenario → plan: `sim create` + inspect gives the plan operations.md prescribes."""

from __future__ import annotations

from pathlib import Path

import pytest

from magicstick_host.sim.network_scenarios import NETWORK_SCENARIOS
from tests.inspect.conftest import inspect_valid

N26 = {"linux-generic": "7.0.0-31.31"}
N24 = {"linux-generic-hwe-24.04": "7.0.0-31.31~24.04.1"}
NONE: dict[str, str] = {}

AV, RD = "available", "ready"
# experiment: (state, engineValidationAvailable), or None when no experiment is offered
# scenario: (state, packages, rebootRequired, experiment, gpuMemory supported)
EXPECTED: dict[str, tuple[str, dict[str, str], bool, tuple[str, bool] | None, bool]] = {
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
    # the kernel must change under the NVIDIA driver: blocked, the experiment installs it
    "strix-halo-nvidia-ubuntu-26.04-old-kernel": ("blocked", NONE, False, (AV, True), False),
    # the only AMD GPU is a working Strix Halo on a fixed kernel: the normal profile branch
    "strix-halo-nvidia-ubuntu-26.04-ready": ("ready", NONE, False, None, True),
    "strix-halo-nvidia-unbound-ubuntu-26.04-ready": ("ready", NONE, False, None, False),
    # a second AMD GPU: always blocked; the experiment ends unverified
    "strix-halo-second-amd-ubuntu-26.04-old-kernel": ("blocked", NONE, False, (AV, False), False),
    "strix-halo-second-amd-ubuntu-26.04-ready": ("blocked", NONE, False, (RD, False), False),
    "nvidia-datacenter-ubuntu-24.04": ("not-required", NONE, False, None, False),
    "cpu-only-ubuntu-24.04": ("not-required", NONE, False, None, False),
    "intel-only-ubuntu-24.04": ("not-required", NONE, False, None, False),
    "strix-halo-debian-13": ("blocked", NONE, False, None, False),
    "strix-halo-pci-missing-class": ("blocked", NONE, False, None, False),
    "strix-halo-pci-missing-vendor": ("blocked", NONE, False, None, False),
    # the network hosts (sim/network_scenarios.py) are the ready 26.04 appliance
    **{name: ("ready", NONE, False, None, True) for name, _, _ in NETWORK_SCENARIOS},
    # model caches (sim/model_cache.py) on the ready host: the GPU plan is unaffected
    "strix-halo-ubuntu-26.04-model-cache": ("ready", NONE, False, None, True),
    "strix-halo-ubuntu-26.04-model-cache-symlinked-root": ("ready", NONE, False, None, True),
    "strix-halo-ubuntu-26.04-model-cache-symlink-inside": ("ready", NONE, False, None, True),
    "strix-halo-ubuntu-26.04-model-cache-nested-mount": ("ready", NONE, False, None, True),
}
PLAN_FIELDS = {
    "state", "message", "profileId", "profileVersion", "gpuProfile", "experimental",
    "packages", "targetKernel", "rebootRequired", "displayGpus", "id",
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
        exp = plan["experiment"]
        # a plan of its own for the dashboard: every plan field, always experimental
        assert set(exp) == PLAN_FIELDS | {"experimentMode", "engineValidationAvailable"}
        assert (exp["state"], exp["engineValidationAvailable"]) == experiment
        assert exp["experimental"] is True and exp["experimentMode"] is True
        assert exp["id"] != plan["id"]
        assert (exp["profileId"], exp["profileVersion"], exp["gpuProfile"]) == (
            plan["profileId"], "1", "strix-halo"
        )
        # the experiment is the same shipped package plan, shown with the full GPU list
        assert exp["displayGpus"] == plan["displayGpus"]
        assert len(plan["displayGpus"]) >= 2
        if exp["state"] == "ready":
            assert (exp["packages"], exp["rebootRequired"]) == ({}, False)
        else:
            assert set(exp["packages"]) <= set(N26) and exp["rebootRequired"] is True
    assert doc["gpuMemory"]["supported"] is memory
    if state in (AV, RD) or experiment is not None:
        assert "prepare-gpu" in doc["actions"]
    else:
        assert "prepare-gpu" not in doc["actions"]


def test_the_old_kernel_plan_is_exactly_the_reviewed_pin(sim_roots: dict[str, Path]) -> None:
    plan = inspect_valid(sim_roots["strix-halo-ubuntu-26.04-old-kernel"])["plan"]
    assert plan["packages"] == {"linux-generic": "7.0.0-31.31"}
    assert plan["targetKernel"] == "7.0.0-31-generic"
    assert plan["profileId"] == "strix-halo-ubuntu-26.04" and plan["profileVersion"] == "1"
    assert plan["gpuProfile"] == "strix-halo"


def test_no_profile_gives_empty_strings_not_null(sim_roots: dict[str, Path]) -> None:
    for scenario in ("cpu-only-ubuntu-24.04", "strix-halo-debian-13"):
        plan = inspect_valid(sim_roots[scenario])["plan"]
        profile = [plan[k] for k in ("profileId", "profileVersion", "gpuProfile", "targetKernel")]
        assert profile == ["", "", "", ""] and plan["experimental"] is False


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


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_memory_option_labels_are_the_firmware_text(
    scenario: str, sim_roots: dict[str, Path]
) -> None:
    doc = inspect_valid(sim_roots[scenario])
    options = doc["gpuMemory"]["options"]
    files = list(sim_roots[scenario].glob("sys/bus/pci/devices/*/uma/carveout_options"))
    if not files:
        assert options == []
        return
    (path,) = files
    lines = path.read_text().splitlines()
    firmware = {int(line.split(": ", 1)[0]): line.split(": ", 1)[1].strip() for line in lines}
    if not options:  # the capability can be unsupported before the options are listed
        return
    assert {o["index"]: o["label"] for o in options} == firmware
    labels = [o["label"] for o in options]
    assert "Minimum (512 MB)" in labels and "(1 GB)" in labels
