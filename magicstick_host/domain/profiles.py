"""Shipped, reviewed preparation profiles as data, and the package gate they must pass.

A profile reaches the planner only through `profile_from_document`, after the JSON Schema has
accepted the file (profile_store.py). The OS/package pairing is checked here in code as well,
so a schema mistake cannot let `linux-generic` onto 24.04 or the HWE meta package onto 26.04.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from magicstick_host.domain.canonical import sha256_hex
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.versions import is_valid_version
from magicstick_host.lite_dataclasses import dataclass

if TYPE_CHECKING:
    from typing import Any

# (os id, VERSION_ID) -> the only package names a profile for that OS may pin
ALLOWED_PACKAGES: Mapping[tuple[str, str], frozenset[str]] = {
    ("ubuntu", "26.04"): frozenset({"linux-generic"}),
    ("ubuntu", "24.04"): frozenset({"linux-generic-hwe-24.04"}),
}
# exact versions only: no wildcard, no "latest", no relation operators
VERSION_PATTERN = re.compile(r"^[0-9][A-Za-z0-9.+:~_-]*$")
# the runtime profile ids the magicstick operator's catalog knows for this GPU; any other id
# makes the node ineligible, so every preparation would fail in Registering (contract.md)
OPERATOR_RUNTIME_PROFILES = frozenset({"strix-halo"})


@dataclass(frozen=True)
class Profile:
    id: str
    version: int  # the reviewed file's integer; published as a string (published_version)
    os_id: str
    os_version_id: str
    architecture: str
    device: str  # "vvvv:dddd"
    # the operator's runtime profile id, handed to ModuleActivation as compatibilityProfile;
    # the operator's catalog knows only `strix-halo` for this GPU
    gpu_profile: str
    experimental: bool
    target_kernel: str  # `uname -r` after the preparation
    packages: tuple[tuple[str, str], ...]  # (name, exact version), sorted by name
    reviewed_by: str | None = None
    notes: str | None = None

    @property
    def package_map(self) -> dict[str, str]:
        return dict(self.packages)

    @property
    def published_version(self) -> str:
        """The version as the report carries it: a string (contract.md, `profileVersion`)."""
        return str(self.version)

    @property
    def digest(self) -> str:
        """Covers every field, so an edit without a version bump still changes plan ids."""
        return sha256_hex(
            {
                "id": self.id,
                "version": self.version,
                "os": [self.os_id, self.os_version_id],
                "architecture": self.architecture,
                "device": self.device,
                "gpuProfile": self.gpu_profile,
                "experimental": self.experimental,
                "targetKernel": self.target_kernel,
                "packages": self.package_map,
            }
        )


# compiled (by re's cache) when an error message is first written, not at import
_PLAIN_KEY = r"^[A-Za-z_][A-Za-z0-9_-]*$"


def json_path(parts: Sequence[str | int]) -> str:
    """`$.packages["linux-generic-hwe-24.04"]`-style path, for one-line error messages."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.match(_PLAIN_KEY, part):
            out += f".{part}"
        else:
            out += f'["{part}"]'
    return out


def package_gate_problems(
    os_id: str, os_version_id: str, packages: Mapping[str, str]
) -> list[tuple[str, str]]:
    """(json path, problem) for every package the gate refuses on that OS; empty when clean."""
    allowed = ALLOWED_PACKAGES.get((os_id, os_version_id))
    if allowed is None:
        return [("$.os", f"no package family is allowed on {os_id} {os_version_id}")]
    problems: list[tuple[str, str]] = []
    if not packages:
        problems.append(("$.packages", "at least one package is required"))
    for name in sorted(packages):
        version = packages[name]
        if name not in allowed:
            wanted = ", ".join(sorted(allowed))
            problems.append(
                (
                    json_path(["packages", name]),
                    f"package {name} is not allowed on {os_id} {os_version_id} (only {wanted})",
                )
            )
        if not VERSION_PATTERN.match(version) or not is_valid_version(version):
            problems.append((json_path(["packages", name]), f"{version!r} is not an exact version"))
    return problems


def profile_from_document(doc: Mapping[str, Any]) -> Profile:
    """Build a Profile from a schema-valid document. Raises ValueError("<path>: <problem>")."""
    os_doc = doc["os"]
    packages = {str(k): str(v) for k, v in doc["packages"].items()}
    problems = package_gate_problems(str(os_doc["id"]), str(os_doc["versionId"]), packages)
    if problems:
        path, problem = problems[0]
        raise ValueError(f"{path}: {problem}")
    gpu_profile = str(doc["gpuProfile"])
    if gpu_profile not in OPERATOR_RUNTIME_PROFILES:
        known = ", ".join(sorted(OPERATOR_RUNTIME_PROFILES))
        raise ValueError(
            f"$.gpuProfile: {gpu_profile!r} is not a runtime profile of the operator ({known})"
        )
    return Profile(
        id=str(doc["id"]),
        version=int(doc["version"]),
        os_id=str(os_doc["id"]),
        os_version_id=str(os_doc["versionId"]),
        architecture=str(doc["architecture"]),
        device=str(doc["device"]),
        gpu_profile=gpu_profile,
        experimental=bool(doc["experimental"]),
        target_kernel=str(doc["targetKernel"]),
        packages=tuple(sorted(packages.items())),
        reviewed_by=doc.get("reviewedBy"),
        notes=doc.get("notes"),
    )


def match_profile(ev: Evidence, profiles: Sequence[Profile]) -> Profile | None:
    """The profile whose OS ID + VERSION_ID, architecture and device match the host exactly."""
    for profile in profiles:
        if (
            profile.os_id == ev.os.id
            and profile.os_version_id == ev.os.version_id
            and profile.architecture == ev.arch
            and profile.device in ev.pci.display_ids
        ):
            return profile
    return None


def profile_package_names(profiles: Sequence[Profile]) -> list[str]:
    return sorted({name for p in profiles for name, _ in p.packages})
