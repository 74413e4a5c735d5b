"""Running simulated commands and reading their evidence, for the effect tests."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from magicstick_host.ports.runner import CommandResult
from magicstick_host.sim.runner import SimRunner, read_effects
from magicstick_host.sim.writer import create_host, load_host, write_host
from tests.sim.helpers import PCI, STRIX, parse_deb822, read

TARGET = "7.0.0-31-generic"
KFD = "sys/class/kfd/kfd/topology/nodes"
PREPARE_26 = {"magicstick_profile_id": "strix-halo-ubuntu-26.04",
              "magicstick_os_version_id": "26.04",
              "magicstick_packages": {"linux-generic": "7.0.0-31.31"},
              "magicstick_target_kernel": TARGET}
PREPARE_24 = {"magicstick_profile_id": "strix-halo-ubuntu-24.04",
              "magicstick_os_version_id": "24.04",
              "magicstick_packages": {"linux-generic-hwe-24.04": "7.0.0-31.31~24.04.1"},
              "magicstick_target_kernel": TARGET}


def make(name: str, tmp_path: Path) -> Path:
    root = tmp_path / "host"
    create_host(name, root)
    return root


def edit(root: Path, **changes: Any) -> None:
    host = load_host(root)
    for key, value in changes.items():
        setattr(host, key, value)
    write_host(host, root)


def add_fault(root: Path, fault: str) -> None:
    host = load_host(root)
    host.faults.append(fault)
    write_host(host, root)


def playbook(root: Path, name: str, variables: dict[str, Any], *,
             log: Path | None = None) -> CommandResult:
    vars_file = root.parent / f"{name}.vars.json"
    vars_file.write_text(json.dumps(variables), encoding="utf-8")
    argv = ["ansible-playbook", "-i", "localhost,", "-c", "local",
            f"/usr/local/lib/magicstick/host-management/playbooks/{name}", "-e", f"@{vars_file}"]
    return SimRunner(root).run(argv, timeout=3600, stdout_path=str(log) if log else None)


def effects(root: Path, kind: str) -> list[dict[str, object]]:
    return [e for e in read_effects(root) if e["effect"] == kind]


def packages(root: Path) -> dict[str, tuple[str, str]]:
    """name -> (version, status) from /var/lib/dpkg/status."""
    return {s["Package"]: (s["Version"], s["Status"])
            for s in parse_deb822(read(root, "var/lib/dpkg/status"))}


def mem_total_kib(root: Path) -> int:
    match = re.search(r"^MemTotal: +(\d+) kB$", read(root, "proc/meminfo"), re.M)
    assert match
    return int(match[1])


def vram_total(root: Path) -> int:
    return int(read(root, f"{PCI}/{STRIX}/mem_info_vram_total"))


def gfx_targets(root: Path) -> list[int]:
    if not (root / KFD).is_dir():
        return []
    out = []
    for node in sorted((root / KFD).iterdir()):
        props = dict(line.split() for line in (node / "properties").read_text().splitlines())
        out.append(int(props["gfx_target_version"]))
    return out


def render_minor_of_gfx(root: Path, gfx: int) -> int | None:
    for node in sorted((root / KFD).iterdir()):
        props = dict(line.split() for line in (node / "properties").read_text().splitlines())
        if int(props["gfx_target_version"]) == gfx:
            return int(props["drm_render_minor"])
    return None
