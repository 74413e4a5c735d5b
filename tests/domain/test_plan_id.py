"""Plan ids: the same inputs give the same id; any identity input that changes changes it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from magicstick_host.domain.canonical import sha256_hex
from magicstick_host.domain.evidence import Evidence, KernelInfo, OsInfo, PackageInfo
from magicstick_host.domain.plan.planner import (
    _EXPERIMENT_KIND,
    _PLAN_KIND,
    plan_identity,
    plan_preparation,
)
from tests.domain.builders import host, nvidia, other_gpu, ready_host, shipped_profiles, strix

PROFILES = shipped_profiles()
BASE = host()
MIXED = host(devices=(strix(), nvidia()))


def _ids(ev: Evidence, profiles: Any = PROFILES) -> tuple[str, str | None]:
    plan = plan_preparation(ev, profiles)
    return plan.id, plan.experiment.id if plan.experiment else None


def test_same_inputs_same_id() -> None:
    assert _ids(host()) == _ids(host())
    assert _ids(MIXED) == _ids(host(devices=(strix(), nvidia())))
    # the order of the shipped profiles does not matter
    assert _ids(BASE, PROFILES) == _ids(BASE, tuple(reversed(PROFILES)))


def test_ids_are_hex64_and_experiment_differs() -> None:
    plan_id, exp_id = _ids(MIXED)
    assert exp_id is not None and exp_id != plan_id
    for value in (plan_id, exp_id):
        assert len(value) == 64 and all(c in "0123456789abcdef" for c in value)


_text = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789.-", min_size=1, max_size=12)
_hex4 = st.text(alphabet="0123456789abcdef", min_size=4, max_size=4)
_hex2 = st.text(alphabet="0123456789abcdef", min_size=2, max_size=2)


def _perturb(ev: Evidence, which: str, value: str) -> Evidence:
    dev = ev.pci.devices[-1]
    pci = ev.pci
    changes: dict[str, Any] = {
        "os.id": lambda: {"os": replace(ev.os, id=value)},
        "os.version_id": lambda: {"os": replace(ev.os, version_id=value)},
        "arch": lambda: {"arch": value},
        "kernel.release": lambda: {"kernel": replace(ev.kernel, release=value)},
        "kernel.package_version": lambda: {
            "kernel": replace(ev.kernel, package_version="1" + value)
        },
        "boot_id": lambda: {"boot_id": value},
        "cpu_model": lambda: {"cpu_model": value},
        "dmi_vendor": lambda: {"dmi_vendor": value},
        "dmi_product": lambda: {"dmi_product": value},
        "pkg": lambda: {
            "packages": replace(
                ev.packages, installed={**ev.packages.installed, "linux-generic": "1" + value}
            )
        },
        "pkg.hwe": lambda: {
            "packages": replace(
                ev.packages,
                installed={**ev.packages.installed, "linux-generic-hwe-24.04": "1" + value},
            )
        },
        "dev.address": lambda: {
            "pci": replace(pci, devices=(*pci.devices[:-1], replace(dev, address=value)))
        },
        "dev.revision": lambda: {
            "pci": replace(pci, devices=(*pci.devices[:-1], replace(dev, revision=value[:2])))
        },
        "dev.subsystem": lambda: {
            "pci": replace(pci, devices=(*pci.devices[:-1], replace(dev, subsystem_device=value)))
        },
        "dev.device": lambda: {
            "pci": replace(pci, devices=(*pci.devices[:-1], replace(dev, device=value)))
        },
    }
    return replace(ev, **changes[which]())


FIELDS = [
    "os.id",
    "os.version_id",
    "arch",
    "kernel.release",
    "kernel.package_version",
    "boot_id",
    "cpu_model",
    "dmi_vendor",
    "dmi_product",
    "pkg",
    "pkg.hwe",
    "dev.address",
    "dev.revision",
    "dev.subsystem",
    "dev.device",
]


@settings(max_examples=300)
@given(
    st.sampled_from([BASE, MIXED, host(version_id="24.04")]),
    st.sampled_from(FIELDS),
    st.one_of(_text, _hex4, _hex2),
)
def test_any_identity_change_changes_the_id(ev: Evidence, which: str, value: str) -> None:
    changed = _perturb(ev, which, value)
    if changed == ev:
        return  # the drawn value equals the current one: nothing was perturbed
    before, after = _ids(ev), _ids(changed)
    assert before[0] != after[0]
    if before[1] is not None and after[1] is not None:
        assert before[1] != after[1]


def test_profile_version_or_content_changes_the_id() -> None:
    base = _ids(BASE)
    bumped = tuple(replace(p, version=2) if p.os_version_id == "24.04" else p for p in PROFILES)
    assert _ids(BASE, bumped)[0] != base[0]
    edited = tuple(replace(p, notes="x") if p.os_version_id == "24.04" else p for p in PROFILES)
    # notes are not part of the digest: an edit of the prose alone keeps the id
    assert _ids(BASE, edited)[0] == base[0]
    gpu = tuple(
        replace(p, gpu_profile="other") if p.os_version_id == "24.04" else p for p in PROFILES
    )
    assert _ids(BASE, gpu)[0] != base[0]


def test_unknown_evidence_still_gets_an_id() -> None:
    ev = replace(BASE, os=OsInfo(), kernel=KernelInfo(), boot_id=None, packages=PackageInfo())
    plan_id, _ = _ids(ev)
    assert len(plan_id) == 64 and plan_id != _ids(BASE)[0]


SECOND_AMD = other_gpu("1002", "7550", driver="amdgpu")


@settings(max_examples=50)
@given(
    st.sampled_from(
        [
            MIXED,
            host(devices=(strix(), nvidia(), SECOND_AMD)),
            ready_host(devices=(strix(), SECOND_AMD)),
            ready_host(devices=(strix(), nvidia())),
            host(version_id="24.04", devices=(strix(), nvidia(driver=None))),
        ]
    ),
    st.sampled_from(FIELDS),
    st.one_of(_text, _hex4, _hex2),
)
def test_the_ids_cover_every_published_field(ev: Evidence, which: str, value: str) -> None:
    """Each id is the digest of exactly what is published beside it, plus the host identity:
    a change to any plan or experiment field changes the id the dashboard sends back."""
    for evidence in (ev, _perturb(ev, which, value)):
        doc = plan_preparation(evidence, PROFILES).to_json()
        identity = plan_identity(evidence, PROFILES)
        content = {k: v for k, v in doc.items() if k != "id"}
        assert doc["id"] == sha256_hex({"kind": _PLAN_KIND, "plan": content, "host": identity})
        exp = doc.get("experiment")
        if exp is not None:
            exp_content = {k: v for k, v in exp.items() if k != "id"}
            expected = {"kind": _EXPERIMENT_KIND, "experiment": exp_content, "host": identity}
            assert exp["id"] == sha256_hex(expected)


def test_the_experiment_state_changes_its_id() -> None:
    before = plan_preparation(host(devices=(strix(), SECOND_AMD)), PROFILES).experiment
    after = plan_preparation(ready_host(devices=(strix(), SECOND_AMD)), PROFILES).experiment
    assert before is not None and after is not None
    assert (before.state, after.state) == ("available", "ready")
    assert before.id != after.id
