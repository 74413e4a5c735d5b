from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from magicstick_host.domain.profiles import OPERATOR_RUNTIME_PROFILES, profile_from_document
from magicstick_host.errors import ProfileError
from magicstick_host.profile_store import (
    INSTALLED_PROFILES_DIR,
    PROFILES_ENV,
    SHIPPED_PARSE,
    default_profiles_dir,
    load_profiles,
    shipped_parse,
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
    assert default_profiles_dir() == str(tmp_path)
    monkeypatch.delenv(PROFILES_ENV)
    assert default_profiles_dir() == str(REPO / "profiles")
    assert INSTALLED_PROFILES_DIR == "/usr/local/lib/magicstick/host-management/profiles"


def test_an_unreadable_profile_directory_is_an_error_not_an_empty_set(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def refused(path: object) -> list[str]:
        raise PermissionError(13, "Permission denied", str(path))

    # the suite runs as root, which lists any directory: the refusal is injected
    monkeypatch.setattr("magicstick_host.profile_store.os.listdir", refused)
    with pytest.raises(ProfileError, match=r"cannot be read .*Permission denied"):
        load_profiles(tmp_path)


# --- the shipped parse (profiles/parsed.json) -------------------------------------------------

def test_the_shipped_parse_is_the_parse_of_the_shipped_profiles() -> None:
    shipped = (REPO / "profiles" / SHIPPED_PARSE).read_text()
    assert shipped == shipped_parse(REPO / "profiles"), (
        f"profiles/{SHIPPED_PARSE} is not the parse of profiles/*.yaml: run `make profiles`")


def test_a_shipped_parse_of_other_bytes_is_passed_over(tmp_path: Path) -> None:
    """An edited profile is loaded as edited, never as the parse shipped for its old bytes."""
    _write(tmp_path, F26, GOOD_26)
    (tmp_path / SHIPPED_PARSE).write_text(shipped_parse(tmp_path))
    _write(tmp_path, F26, GOOD_26.replace("reviewedBy: magicstick platform team",
                                          "reviewedBy: someone else"))
    (profile,) = load_profiles(tmp_path)
    assert profile.reviewed_by == "someone else"


@pytest.mark.parametrize("text", ["{not json", "[]", '{"key": 1}', ""])
def test_a_broken_shipped_parse_is_passed_over(tmp_path: Path, text: str) -> None:
    _write(tmp_path, F26, GOOD_26)
    (tmp_path / SHIPPED_PARSE).write_text(text)
    (profile,) = load_profiles(tmp_path)
    assert profile.id == "strix-halo-ubuntu-26.04"


def test_the_shipped_parse_is_checked_in_full(tmp_path: Path) -> None:
    """Its documents pass the schema and the package gate, as a parse of the YAML would."""
    _write(tmp_path, F26, GOOD_26)
    shipped = json.loads(shipped_parse(tmp_path))
    shipped["documents"][0]["packages"] = {"linux-generic": "latest"}
    (tmp_path / SHIPPED_PARSE).write_text(json.dumps(shipped))
    with pytest.raises(ProfileError, match=r"\$\.packages\.linux-generic"):
        load_profiles(tmp_path)


@pytest.mark.real_commands
def test_with_the_shipped_parse_no_yaml_parser_is_imported() -> None:
    code = ("import sys; from pathlib import Path; from magicstick_host.profile_store import "
            f"load_profiles; load_profiles(Path({str(REPO / 'profiles')!r})); "
            "print('yaml' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout == "False\n"


def test_a_profile_json_cannot_hold_is_not_shipped_as_parsed(tmp_path: Path) -> None:
    _write(tmp_path, F26, GOOD_26 + "extra:\n  1: a number key\n")
    with pytest.raises(ProfileError, match="JSON cannot hold exactly"):
        shipped_parse(tmp_path)
