"""Simulated host roots for the convergence playbook, with stand-ins for the host's commands.

The roots come from the host simulator's scenarios (magicstick_host/sim/), so the playbook reads
the same /etc/os-release, PCI tree and dpkg status that `inspect` reads. The playbook runs the
host's own commands from under magicstick_root; here they are small stand-ins that append
every call to `<root>/.calls.jsonl` and keep their state under `<root>/.stub/`:
- `usr/bin/systemctl`: daemon-reload; is-enabled/enable and is-active/start of a unit;
- `usr/bin/nvidia-smi -L`: lists a GPU, or fails when `.stub/nvidia-smi-fails` exists;
- `usr/sbin/shutdown -r +1 TEXT`: writes /run/systemd/shutdown/scheduled as systemd does;
- `usr/sbin/update-initramfs -u`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from magicstick_host.sim.model import Host
from magicstick_host.sim.writer import create_host, load_host, write_host

STUB = '''#!{python}
import json, os, sys, time
from pathlib import Path
root = Path({root!r})
name = os.path.basename(sys.argv[0])
args = sys.argv[1:]
with open(root / ".calls.jsonl", "a") as log:
    log.write(json.dumps({{"cmd": name, "args": args}}) + "\\n")
stub = root / ".stub"
stub.mkdir(exist_ok=True)
if name == "systemctl":
    verb = args[0]
    unit = args[-1]
    if verb == "is-enabled":
        on = (stub / ("enabled-" + unit)).exists()
        print("enabled" if on else "disabled")
        sys.exit(0 if on else 1)
    if verb == "enable":
        (stub / ("enabled-" + unit)).write_text("")
    if verb == "is-active":
        on = (stub / ("active-" + unit)).exists()
        print("active" if on else "inactive")
        sys.exit(0 if on else 3)
    if verb == "start":
        (stub / ("active-" + unit)).write_text("")
    sys.exit(0)
if name == "nvidia-smi":
    if (stub / "nvidia-smi-fails").exists():
        print("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
              file=sys.stderr)
        sys.exit(9)
    print("GPU 0: NVIDIA GeForce RTX 5090 (UUID: GPU-5f0c6a54-1d2e-4b8c-9a0e-000000000001)")
    sys.exit(0)
if name == "shutdown":
    scheduled = root / "run/systemd/shutdown/scheduled"
    scheduled.parent.mkdir(parents=True, exist_ok=True)
    usec = int((time.time() + 60) * 1_000_000)
    scheduled.write_text(f"USEC={{usec}}\\nWARN_WALL=1\\nMODE=reboot\\nUID=0\\n")
    print("Reboot scheduled for +1 min")
sys.exit(0)
'''
COMMANDS = ("usr/bin/systemctl", "usr/bin/nvidia-smi", "usr/sbin/shutdown",
            "usr/sbin/update-initramfs")
NEW_INSTALL = "var/lib/magicstick/new-install"
FIRST_CONVERGENCE = "var/lib/magicstick/convergence/first-convergence"
CONTAINERD = "var/lib/rancher/k3s/agent/etc/containerd"
IMPORTS_V3 = (
    'version = 3\nroot = "/var/lib/rancher/k3s/agent/containerd"\n'
    'imports = ["/var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.d/*.toml"]\n'
)
NO_IMPORTS = 'version = 3\nroot = "/var/lib/rancher/k3s/agent/containerd"\n'


def without_nvidia_packages(host: Host) -> None:
    host.packages = [p for p in host.packages if not p.name.startswith("nvidia-")]


def make_root(
    root: Path,
    scenario: str,
    *,
    change: Callable[[Host], None] | None = None,
    new_install: bool = True,
    k3s: bool = True,
    containerd: str | None = IMPORTS_V3,
) -> Path:
    create_host(scenario, root)
    if change is not None:
        host = load_host(root)
        change(host)
        write_host(host, root)
    for rel in COMMANDS:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(STUB.format(python=sys.executable, root=str(root)))
        path.chmod(0o755)
    if new_install:
        (root / NEW_INSTALL).parent.mkdir(parents=True, exist_ok=True)
        (root / NEW_INSTALL).write_text("created by the installer media\n")
    if k3s:
        (root / "usr/local/bin").mkdir(parents=True, exist_ok=True)
        (root / "usr/local/bin/k3s").write_text("#!/bin/sh\n# the existing K3s\n")
        (root / "usr/local/bin/k3s").chmod(0o755)
    if containerd is not None:
        (root / CONTAINERD).mkdir(parents=True, exist_ok=True)
        (root / CONTAINERD / "config.toml").write_text(containerd)
    return root


def calls(root: Path, cmd: str | None = None) -> list[list[str]]:
    path = root / ".calls.jsonl"
    if not path.exists():
        return []
    found: list[dict[str, Any]] = [json.loads(line) for line in path.read_text().splitlines()]
    return [[c["cmd"], *c["args"]] for c in found if cmd is None or c["cmd"] == cmd]


def reboot_happened(root: Path) -> None:
    """What the simulated reboot leaves: no scheduled shutdown, /run emptied of it."""
    (root / "run/systemd/shutdown/scheduled").unlink(missing_ok=True)
