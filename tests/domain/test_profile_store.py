from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from magicstick_host.domain.profiles import OPERATOR_RUNTIME_PROFILES, profile_from_document
from magicstick_host.errors import ProfileError
from magicstick_host.profile_store import (
    INSTALLED_PROFILES_DIR,
    PROFILES_ENV,
    default_profiles_dir,
    load_profiles,
)
from tests.domain.builders import REPO

# the only runtime profile id the magicstick operator's catalog knows for the Strix Halo
# (contract.md): ModuleActivation gets it as compatibilityProfile, and an unknown id makes the
# node ineligible, so every preparation would fail in Registering
OPERATOR_CATALOG_ID = "strix-halo"

GOOD_26 = (REPO / "profiles" / "strix-halo-ubuntu-26.04.yaml").read_text()
GOOD_24 = (REPO / "profiles" / "strix-halo-ubuntu-24.04.yaml").read_text()


def test_shipped_profiles() -> None:
    profiles = {p.id: p for p in load_profiles(REPO / "profiles")}
    assert set(profiles) == {"strix-halo-ubuntu-26.04", "strix-halo-ubuntu-24.04"}
    p26, p24 = profiles["strix-halo-ubuntu-26.04"], profiles["strix-halo-ubuntu-24.04"]
    assert p26.package_map == {"linux-generic": "7.0.0-31.31"}
    assert p24.package_map == {"linux-generic-hwe-24.04": "7.0.0-31.31~24.04.1"}
    for p in (p26, p24):
        assert p.version == 1 and p.published_version == "1"
        assert (p.os_id, p.architecture, p.device) == ("ubuntu", "x86_64", "1002:1586")
        assert p.target_kernel == "7.0.0-31-generic"
        assert p.experimental is True
        assert p.gpu_profile == OPERATOR_CATALOG_ID
    assert (p26.os_version_id, p24.os_version_id) == ("26.04", "24.04")


def test_shipped_profiles_name_the_operators_catalog_id() -> None:
    profiles = load_profiles(REPO / "profiles")
    assert profiles and {p.gpu_profile for p in profiles} == {OPERATOR_CATALOG_ID}
    assert {OPERATOR_CATALOG_ID} == OPERATOR_RUNTIME_PROFILES
    for path in sorted((REPO / "profiles").glob("*.yaml")):
        assert yaml.safe_load(path.read_text())["gpuProfile"] == OPERATOR_CATALOG_ID


def test_the_code_refuses_a_runtime_profile_the_operator_does_not_know() -> None:
    doc = yaml.safe_load(GOOD_26)
    assert profile_from_document(doc).gpu_profile == OPERATOR_CATALOG_ID
    with pytest.raises(ValueError, match=r"^\$\.gpuProfile: 'strix-halo-gfx1151' is not"):
        profile_from_document({**doc, "gpuProfile": "strix-halo-gfx1151"})


def _write(tmp_path: Path, name: str, text: str) -> Path:
    (tmp_path / name).write_text(text)
    return tmp_path


F26 = "strix-halo-ubuntu-26.04.yaml"


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ("id: [unclosed\n", "$", "not valid YAML"),
        ("- a list\n", "$", "must be a mapping"),
        (GOOD_26.replace("gpuProfile: strix-halo\n", ""), "$.gpuProfile", "missing"),
        (
            GOOD_26.replace("gpuProfile: strix-halo\n", "gpuProfile: strix-halo-gfx1151\n"),
            "$.gpuProfile",
            "is not one of ['strix-halo']",
        ),
        (GOOD_26.replace("version: 1", "version: 0"), "$.version", "minimum"),
        (GOOD_26.replace("version: 1", 'version: "1"'), "$.version", "integer"),
        (GOOD_26 + "extra: 1\n", "$.extra", "unknown field"),
        (GOOD_26.replace('"7.0.0-31.31"', '"7.0.0*"'), "$.packages.linux-generic", "match"),
        (GOOD_26.replace('"7.0.0-31.31"', "latest"), "$.packages.linux-generic", "match"),
        (
            GOOD_26.replace("linux-generic:", "linux-generic-hwe-24.04:"),
            '$.packages["linux-generic-hwe-24.04"]',
            "not allowed",
        ),
        (
            GOOD_26.replace("linux-generic:", "nvidia-driver-580:"),
            "$.packages.nvidia-driver-580",
            "not allowed",
        ),
        (GOOD_26.replace('versionId: "26.04"', "versionId: 26.04"), "$.os.versionId", "26.04"),
        (GOOD_26.replace('versionId: "26.04"', 'versionId: "25.10"'), "$.os.versionId", ""),
        (GOOD_26.replace("architecture: x86_64", "architecture: aarch64"), "$.architecture", ""),
        (
            GOOD_26.replace("targetKernel: 7.0.0-31-generic", "targetKernel: latest"),
            "$.targetKernel",
            "match",
        ),
        (GOOD_26.replace("experimental: true", "experimental: yes please"), "$.experimental", ""),
        (GOOD_26 + "version: 2\n", "$", "duplicate key"),
        (GOOD_26.replace("id: strix-halo-ubuntu-26.04", "id: Bad Id"), "$.id", "match"),
    ],
)
def test_load_errors_name_file_and_field(
    tmp_path: Path, text: str, field: str, problem: str
) -> None:
    _write(tmp_path, F26, text)
    with pytest.raises(ProfileError) as info:
        load_profiles(tmp_path)
    message = str(info.value)
    assert "\n" not in message
    assert F26 in message
    assert f": {field}: " in message
    assert problem in message


def test_os_pairing_enforced_for_24_04(tmp_path: Path) -> None:
    bad = GOOD_24.replace("linux-generic-hwe-24.04:", "linux-generic:")
    _write(tmp_path, "strix-halo-ubuntu-24.04.yaml", bad)
    with pytest.raises(ProfileError, match=r"24\.04\.yaml: \$\.packages\.linux-generic: "):
        load_profiles(tmp_path)


def test_duplicate_ids(tmp_path: Path) -> None:
    _write(tmp_path, F26, GOOD_26)
    _write(tmp_path, "zz-copy.yaml", GOOD_26)
    with pytest.raises(ProfileError) as info:
        load_profiles(tmp_path)
    message = str(info.value)
    assert "zz-copy.yaml: $.id: duplicate id 'strix-halo-ubuntu-26.04'" in message
    assert F26 in message


def test_code_gate_backs_the_schema() -> None:
    from magicstick_host.domain.profiles import package_gate_problems

    assert package_gate_problems("ubuntu", "26.04", {"linux-generic": "7.0.0-31.31"}) == []
    assert package_gate_problems("ubuntu", "24.04", {"linux-generic": "7.0.0-31.31"})
    assert package_gate_problems("ubuntu", "26.04", {"linux-generic-hwe-24.04": "1"})
    assert package_gate_problems("ubuntu", "26.04", {"linux-generic": "7.0.*"})
    assert package_gate_problems("ubuntu", "26.04", {})
    assert package_gate_problems("debian", "13", {"linux-generic": "1"})


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="does not exist"):
        load_profiles(tmp_path / "nope")


def test_empty_directory_has_no_profiles(tmp_path: Path) -> None:
    assert load_profiles(tmp_path) == ()


def test_default_profiles_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(PROFILES_ENV, str(tmp_path))
    assert default_profiles_dir() == tmp_path
    monkeypatch.delenv(PROFILES_ENV)
    assert default_profiles_dir() == REPO / "profiles"
    assert Path("/usr/local/lib/magicstick/host-management/profiles") == INSTALLED_PROFILES_DIR
