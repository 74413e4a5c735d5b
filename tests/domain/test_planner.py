"""Every Plan rule of operations.md as a table: evidence in, state + key fields out."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from magicstick_host.domain.evidence import (
    Evidence,
    KernelInfo,
    KfdNode,
    OsInfo,
    PciInventory,
    Unknown,
)
from magicstick_host.domain.parsers.dpkg_status import Unsettled
from magicstick_host.domain.plan.planner import EXPERIMENT_WARNING, plan_preparation
from magicstick_host.domain.profiles import Profile
from tests.domain.builders import (
    REPO,
    TARGET,
    host,
    nvidia,
    other_gpu,
    ready_host,
    shipped_profiles,
    strix,
)

PROFILES = shipped_profiles()
P26 = "strix-halo-ubuntu-26.04"
P24 = "strix-halo-ubuntu-24.04"
_SCHEMA = json.loads((REPO / "magicstick_host/schemas/plan.schema.json").read_text())
PLAN_VALIDATOR = Draft202012Validator({**_SCHEMA, "$ref": "#/$defs/plan"})

INCOMPLETE = host(pci=PciInventory(devices=(strix(),), complete=False))
UNREADABLE = host(pci=PciInventory(devices=(), complete=False))
NO_GPU = host(devices=())
INTEL_ONLY = host(devices=(other_gpu("8086", "7d55", driver="i915"),))
OTHER_AMD = host(devices=(other_gpu("1002", "744c", driver="amdgpu"),))

# name, evidence, state, profile id, packages, reboot, message fragment
CASES: list[tuple[str, Evidence, str, str, dict[str, str], bool, str]] = [
    ("inventory incomplete", INCOMPLETE, "blocked", "", {}, False, "incomplete"),
    ("inventory unreadable", UNREADABLE, "blocked", "", {}, False, "unreadable"),
    (
        "pci unknown",
        host(unknowns=(Unknown("pci.devices", "sysfs unreadable"),)),
        "blocked", "",
        {},
        False,
        "sysfs unreadable",
    ),
    ("no gpu", NO_GPU, "not-required", "", {}, False, "operator path"),
    ("nvidia only", host(devices=(nvidia(),)), "not-required", "", {}, False, "10de:2684"),
    ("intel only", INTEL_ONLY, "not-required", "", {}, False, "operator path"),
    ("other amd only", OTHER_AMD, "not-required", "", {}, False, "operator path"),
    (
        "unknown os",
        host(os=OsInfo(), unknowns=(Unknown("os", "/etc/os-release missing"),)),
        "blocked", "",
        {},
        False,
        "os-release missing",
    ),
    ("unknown arch", host(arch=None), "blocked", "", {}, False, "architecture"),
    (
        "no reviewed profile: 25.10",
        host(version_id="25.10"),
        "blocked", "",
        {},
        False,
        "no reviewed profile",
    ),
    (
        "no reviewed profile: debian",
        host(os=OsInfo(id="debian", version_id="13")),
        "blocked", "",
        {},
        False,
        "no reviewed profile",
    ),
    ("no reviewed profile: arm", host(arch="aarch64"), "blocked", "", {}, False, "reviewed"),
    (
        "26.04 6.17 available",
        host(),
        "available",
        P26,
        {"linux-generic": "7.0.0-31.31"},
        True,
        "lacks",
    ),
    (
        "24.04 6.17 hwe available",
        host(version_id="24.04"),
        "available",
        P24,
        {"linux-generic-hwe-24.04": "7.0.0-31.31~24.04.1"},
        True,
        "lacks",
    ),
    (
        "24.04 6.8 GA, meta not installed",
        host(version_id="24.04", release="6.8.0-45-generic", installed={}),
        "available",
        P24,
        {"linux-generic-hwe-24.04": "7.0.0-31.31~24.04.1"},
        True,
        "6.8.0-45-generic",
    ),
    (
        "6.14 generic not suitable",
        host(release="6.14.0-37-generic"),
        "available",
        P26,
        {"linux-generic": "7.0.0-31.31"},
        True,
        "lacks",
    ),
    (
        "pin installed, not yet booted",
        host(
            installed={"linux-generic": "7.0.0-31.31"}, boot_kernels=("6.17.0-14-generic", TARGET)
        ),
        "available",
        P26,
        {},
        True,
        "restart into",
    ),
    (
        "pin installed but target missing from /boot",
        host(installed={"linux-generic": "7.0.0-31.31"}),
        "blocked",
        P26,
        {},
        False,
        "/boot has no kernel",
    ),
    ("target running, driver ready", ready_host(), "ready", P26, {}, False, "is ready"),
    (
        "24.04 target running, driver ready",
        ready_host(version_id="24.04"),
        "ready",
        P24,
        {},
        False,
        "is ready",
    ),
    (
        "oem kernel with fixes, driver ready",
        host(release="6.14.0-1018-oem"),
        "ready",
        P26,
        {},
        False,
        "no package change",
    ),
    (
        "newer running kernel, driver ready",
        host(release="7.1.0-3-generic", installed={"linux-generic": "7.1.0-3.3"}),
        "ready",
        P26,
        {},
        False,
        "is ready",
    ),
    (
        "target running, driver failing",
        ready_host(dev_kfd=False),
        "blocked",
        P26,
        {},
        False,
        "not a repair",
    ),
    (
        "target running, amdgpu unbound",
        ready_host(devices=(strix(driver=None),)),
        "blocked",
        P26,
        {},
        False,
        "not bound to amdgpu",
    ),
    (
        "oem kernel, wrong gfx",
        host(release="6.14.0-1020-oem", kfd_nodes=(KfdNode(1, 110000, 128),)),
        "blocked",
        P26,
        {},
        False,
        "not a repair",
    ),
    (
        "installed meta newer than pin",
        host(installed={"linux-generic": "7.0.0-40.40"}),
        "blocked",
        P26,
        {},
        False,
        "never downgraded",
    ),
    (
        "newer kernel installed, not running",
        host(boot_kernels=("6.17.0-14-generic", "7.0.0-40-generic")),
        "blocked",
        P26,
        {},
        False,
        "7.0.0-40-generic is newer",
    ),
    (
        "unparsable installed version",
        host(installed={"linux-generic": "garbage!"}),
        "blocked",
        P26,
        {},
        False,
        "cannot be compared",
    ),
    (
        "kernel release unknown",
        host(kernel=KernelInfo(), unknowns=(Unknown("kernel.release", "no osrelease"),)),
        "blocked",
        P26,
        {},
        False,
        "no osrelease",
    ),
    (
        "kernel package version unknown",
        host(kernel=KernelInfo(release="6.17.0-14-generic")),
        "blocked",
        P26,
        {},
        False,
        "package version",
    ),
    ("boot id unknown", host(boot_id=None), "blocked", P26, {}, False, "boot ID"),
    (
        "packages unknown",
        host(installed={}, unknowns=(Unknown("packages.installed", "dpkg status unreadable"),)),
        "blocked",
        P26,
        {},
        False,
        "dpkg status unreadable",
    ),
    (
        "hardware identity unknown",
        host(cpu_model=None),
        "blocked",
        P26,
        {},
        False,
        "hardware identity",
    ),
]


@pytest.mark.parametrize(
    ("ev", "state", "profile_id", "packages", "reboot", "fragment"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_plan_rules(
    ev: Evidence,
    state: str,
    profile_id: str,
    packages: dict[str, str],
    reboot: bool,
    fragment: str,
) -> None:
    plan = plan_preparation(ev, PROFILES)
    doc = plan.to_json()
    assert doc["state"] == state, doc["message"]
    assert doc["profileId"] == profile_id
    assert doc["packages"] == packages
    assert doc["rebootRequired"] is reboot
    assert fragment in doc["message"]
    assert "experiment" not in doc
    _check_shape(doc)


PLAN_FIELDS = {
    "state",
    "message",
    "profileId",
    "profileVersion",
    "gpuProfile",
    "experimental",
    "packages",
    "targetKernel",
    "rebootRequired",
    "displayGpus",
    "id",
}


def _check_shape(doc: dict[str, Any]) -> None:
    assert list(PLAN_VALIDATOR.iter_errors(doc)) == []
    assert set(doc) - {"experiment"} == PLAN_FIELDS
    assert 0 < len(doc["message"]) <= 2048
    if doc["profileId"] == "":
        # no profile applies: strings stay strings, never null
        assert doc["profileVersion"] == "" and doc["gpuProfile"] == ""
        assert doc["targetKernel"] == "" and doc["experimental"] is False
    else:
        assert doc["profileVersion"] == "1" and doc["gpuProfile"] == "strix-halo"
        assert doc["experimental"] is True and doc["targetKernel"] != ""
    if doc["state"] == "ready":
        assert doc["packages"] == {} and doc["rebootRequired"] is False
    assert doc["displayGpus"] == sorted(doc["displayGpus"])
    if "experiment" in doc:
        _check_experiment(doc)


def _check_experiment(doc: dict[str, Any]) -> None:
    """The experiment is a plan of its own for the dashboard: every plan field, offered."""
    exp = doc["experiment"]
    assert set(exp) == (PLAN_FIELDS | {"experimentMode", "engineValidationAvailable"})
    assert exp["state"] in ("ready", "available")
    assert exp["experimental"] is True and exp["experimentMode"] is True
    assert exp["message"].startswith(EXPERIMENT_WARNING) and len(exp["message"]) <= 2048
    profile = (exp["profileId"], exp["profileVersion"], exp["gpuProfile"])
    assert profile == (doc["profileId"], "1", "strix-halo")
    assert exp["displayGpus"] == doc["displayGpus"]
    if exp["state"] == "ready":
        assert exp["packages"] == {} and exp["rebootRequired"] is False
    else:
        assert exp["rebootRequired"] is True and exp["targetKernel"] == TARGET
    assert exp["id"] != doc["id"] and len(exp["id"]) == 64


def test_memory_unknowns_do_not_block_the_plan() -> None:
    base = plan_preparation(host(), PROFILES).to_json()
    ev = host(
        unknowns=(
            Unknown("pci.devices.0000:c5:00.0.uma.options", "bad line"),
            Unknown("pci.devices.0000:c5:00.0.vram_total_bytes", "unreadable"),
            Unknown("os.codename", "no VERSION_CODENAME"),
            Unknown("ttm.module", "two holders"),
        )
    )
    doc = plan_preparation(ev, PROFILES).to_json()
    assert doc["state"] == "available"
    assert doc["id"] == base["id"]


def test_device_identity_unknown_blocks_the_plan() -> None:
    ev = host(unknowns=(Unknown("pci.devices.0000:c5:00.0.driver", "link unreadable"),))
    doc = plan_preparation(ev, PROFILES).to_json()
    assert doc["state"] == "blocked" and "link unreadable" in doc["message"]


def test_ready_target_is_the_running_kernel() -> None:
    doc = plan_preparation(host(release="6.14.0-1018-oem"), PROFILES).to_json()
    assert doc["targetKernel"] == "6.14.0-1018-oem"
    assert plan_preparation(host(), PROFILES).to_json()["targetKernel"] == TARGET


def test_no_profiles_shipped_blocks() -> None:
    doc = plan_preparation(host(), ()).to_json()
    assert doc["state"] == "blocked" and "no reviewed profile" in doc["message"]


def test_code_gate_blocks_a_bad_profile_even_if_loaded() -> None:
    bad = replace(PROFILES[1], packages=(("linux-generic-hwe-24.04", "7.0.0-31.31~24.04.1"),))
    assert bad.os_version_id == "26.04"
    doc = plan_preparation(host(), (bad,)).to_json()
    assert doc["state"] == "blocked" and "package gate" in doc["message"]
    assert doc["packages"] == {}


# ---- mixed GPUs ---------------------------------------------------------------------------


def _mixed(*others: Any, **kw: Any) -> dict[str, Any]:
    doc = plan_preparation(host(devices=(strix(), *others), **kw), PROFILES).to_json()
    _check_shape(doc)
    return doc


@pytest.mark.parametrize(
    ("other", "validation"),
    [
        (nvidia(), True),
        (nvidia(driver=None), True),
        (other_gpu("8086", "7d55", driver="i915"), True),
        (other_gpu("1002", "744c", driver="amdgpu"), False),
        (other_gpu("1a03", "2000", driver=None), True),
    ],
)
def test_mixed_gpus_needing_a_kernel_change_are_blocked_with_experiment(
    other: Any, validation: bool
) -> None:
    doc = _mixed(other)
    assert doc["state"] == "blocked" and doc["packages"] == {} and not doc["rebootRequired"]
    assert "shares this computer's kernel" in doc["message"]
    exp = doc["experiment"]
    assert exp["state"] == "available"
    assert exp["engineValidationAvailable"] is validation
    assert exp["packages"] == {"linux-generic": "7.0.0-31.31"}
    assert exp["rebootRequired"] is True and exp["targetKernel"] == TARGET
    assert exp["displayGpus"] == sorted(["1002:1586", other.pci_id])


@pytest.mark.parametrize(
    "other",
    [
        nvidia(),
        nvidia(driver=None),  # the companion driver binds later; the plan needs nothing of it
        other_gpu("8086", "7d55", driver="i915"),
        other_gpu("1a03", "2000", driver=None),
    ],
    ids=["nvidia", "nvidia unbound", "intel", "bmc vga"],
)
@pytest.mark.parametrize(
    "release", [TARGET, "6.14.0-1018-oem", "7.1.0-3-generic"], ids=["target", "oem", "newer"]
)
def test_a_working_strix_halo_beside_other_gpus_is_ready(other: Any, release: str) -> None:
    installed = {"linux-generic": "7.1.0-3.3"} if release.startswith("7.1") else None
    ev = host(devices=(strix(), other), release=release, installed=installed)
    doc = plan_preparation(ev, PROFILES).to_json()
    _check_shape(doc)
    assert doc["state"] == "ready", doc["message"]
    assert "experiment" not in doc
    assert (doc["packages"], doc["rebootRequired"]) == ({}, False)
    profile = (doc["profileId"], doc["gpuProfile"], doc["targetKernel"])
    assert profile == (P26, "strix-halo", release)
    assert other.pci_id in doc["message"] and "kernel is not changed" in doc["message"]


def test_a_working_strix_halo_beside_a_second_amd_gpu_gets_a_ready_experiment() -> None:
    second = other_gpu("1002", "7550", driver="amdgpu")
    doc = plan_preparation(ready_host(devices=(strix(), nvidia(), second)), PROFILES).to_json()
    _check_shape(doc)
    assert doc["state"] == "blocked" and "second AMD GPU (1002:7550)" in doc["message"]
    exp = doc["experiment"]
    assert exp["state"] == "ready" and exp["engineValidationAvailable"] is False
    assert (exp["packages"], exp["rebootRequired"], exp["targetKernel"]) == ({}, False, TARGET)
    assert "cannot be validated" in exp["message"]


def test_a_failing_driver_beside_other_gpus_stays_blocked_without_experiment() -> None:
    doc = plan_preparation(ready_host(devices=(strix(), nvidia()), dev_kfd=False), PROFILES)
    assert doc.state == "blocked" and doc.experiment is None
    assert "not a repair" in doc.message


@pytest.mark.parametrize(
    ("kw", "fragment"),
    [
        ({"os": OsInfo(), "unknowns": (Unknown("os", "missing"),)}, "could not be read"),
        ({"version_id": "25.10"}, "no reviewed profile"),
        ({"installed": {"linux-generic": "7.0.0-40.40"}}, "never downgraded"),
        ({"boot_id": None}, "boot ID"),
    ],
)
def test_mixed_without_experiment(kw: dict[str, Any], fragment: str) -> None:
    doc = _mixed(nvidia(), **kw)
    assert doc["state"] == "blocked"
    assert "experiment" not in doc
    assert fragment in doc["message"]


def test_two_strix_halo_blocks_without_experiment() -> None:
    doc = _mixed(strix(address="0000:c6:00.0"))
    assert doc["state"] == "blocked" and "experiment" not in doc


def test_only_profile_packages_ever_proposed() -> None:
    names = {n for p in PROFILES for n, _ in p.packages}
    for case in CASES:
        plan = plan_preparation(case[1], PROFILES)
        assert set(plan.package_map) <= names
        if plan.experiment is not None:
            assert set(dict(plan.experiment.packages)) <= names


def _profile(**changes: Any) -> Profile:
    return replace(PROFILES[1], **changes)


def test_long_messages_are_clipped() -> None:
    long_id = "x" * 3000
    doc = plan_preparation(host(), (_profile(id=long_id),)).to_json()
    assert len(doc["message"]) <= 2048


def test_repo_path_exists() -> None:
    assert Path(REPO / "profiles").is_dir()


# --- dpkg's unfinished work (issue #25): neither absent nor installed

def _unsettled(*rows: tuple[str, str]) -> tuple[Unsettled, ...]:
    return tuple(Unsettled(name, "amd64", status) for name, status in rows)


def _with_unsettled(ev: Evidence, *rows: tuple[str, str]) -> Evidence:
    return replace(ev, packages=replace(ev.packages, unsettled=_unsettled(*rows)))


INTERRUPTED_TRIGGERS = (
    ("initramfs-tools", "install ok triggers-pending"),
    ("linux-image-7.0.0-31-generic", "install ok triggers-awaited"),
)


def test_a_target_kernel_awaiting_its_initramfs_is_not_restarted_into() -> None:
    """The pinned meta package is installed and /boot has the target, which alone plans a
    restart; the image still awaits initramfs-tools' trigger: blocked with the fix."""
    ev = host(installed={"linux-generic": "7.0.0-31.31"},
              boot_kernels=(TARGET, "6.17.0-14-generic"), release="6.17.0-14-generic")
    assert plan_preparation(ev, PROFILES).to_json()["rebootRequired"] is True
    doc = plan_preparation(_with_unsettled(ev, *INTERRUPTED_TRIGGERS), PROFILES).to_json()
    assert doc["state"] == "blocked"
    assert doc["packages"] == {} and doc["rebootRequired"] is False
    assert "`dpkg --configure -a`" in doc["message"]
    assert "linux-image-7.0.0-31-generic" in doc["message"]
    PLAN_VALIDATOR.validate(doc)


@pytest.mark.parametrize("status", [
    "install ok unpacked", "install ok half-configured", "install ok triggers-pending",
    "install ok triggers-awaited", "install ok half-installed", "install reinstreq installed",
    "install reinstreq half-installed", "deinstall ok half-configured",
])
def test_an_unsettled_profile_package_is_not_reinstalled(status: str) -> None:
    """Read as absent, the meta package would be installed again; it is blocked instead, with
    dpkg --configure -a where that finishes it and a reinstall where dpkg needs one."""
    ev = _with_unsettled(host(installed={}), ("linux-generic", status))
    doc = plan_preparation(ev, PROFILES).to_json()
    assert doc["state"] == "blocked" and doc["packages"] == {}
    _, flag, state = status.split()
    if flag == "reinstreq" or state == "half-installed":
        assert "`apt-get install --reinstall linux-generic`" in doc["message"]
    else:
        assert "`dpkg --configure -a`" in doc["message"]


def test_many_unsettled_packages_keep_the_fix_in_the_message() -> None:
    rows = [(f"package-{i:03d}-" + "x" * 60, "install ok unpacked") for i in range(200)]
    doc = plan_preparation(_with_unsettled(host(), *rows), PROFILES).to_json()
    assert doc["state"] == "blocked" and "`dpkg --configure -a`" in doc["message"]
    PLAN_VALIDATOR.validate(doc)


def test_a_ready_host_is_not_blocked_by_dpkg_work_it_does_not_need() -> None:
    """No package change and no restart: dpkg's unfinished work is not this plan's to finish."""
    doc = plan_preparation(_with_unsettled(ready_host(), *INTERRUPTED_TRIGGERS), PROFILES)
    assert doc.to_json()["state"] == "ready"
