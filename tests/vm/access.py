"""The way into the guest (tests/vm): ssh as root with the rig's own key, the guest's host key
pinned, one shared connection for every command; and the `guest` and `power` executables of a
rig directory.
"""

from __future__ import annotations

import contextlib
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.vm.rigdir import REPO, Rig, RigError, control_path

# Captured at import: the test suite's subprocess guard patches subprocess.Popen per test.
_POPEN = subprocess.Popen


def run(argv: Sequence[str], *, timeout: float = 120.0, input_bytes: bytes | None = None,
        check: bool = True) -> subprocess.CompletedProcess[bytes]:
    proc = _POPEN(list(argv), stdin=subprocess.PIPE if input_bytes is not None
                  else subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(input_bytes, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise RigError(f"{shlex.join(argv)[:200]}: no answer in {timeout:.0f} s") from None
    done = subprocess.CompletedProcess(list(argv), proc.returncode, out, err)
    if check and proc.returncode != 0:
        last = (err or out).decode(errors="replace").strip().splitlines()[-1:] or [""]
        raise RigError(f"{shlex.join(argv)[:200]} exited {proc.returncode}: {last[0][:300]}")
    return done


def guest(rig: Rig, *argv: str, timeout: float = 120.0, input_bytes: bytes | None = None,
          check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """CMD as root in the guest, through the rig's ssh connection."""
    remote = shlex.join(argv)
    return run(["ssh", "-F", str(rig.ssh_config), "magicstick-vm", "--", remote],
               timeout=timeout, input_bytes=input_bytes, check=check)


def guest_boot_id(rig: Rig, timeout: float = 15.0) -> str | None:
    """This boot's ID as the guest's kernel says, or None while the guest does not answer."""
    try:
        done = guest(rig, "cat", "/proc/sys/kernel/random/boot_id", timeout=timeout, check=False)
    except RigError:
        return None
    text = done.stdout.decode(errors="replace").strip()
    return text if done.returncode == 0 and len(text) == 36 else None


def write_ssh_config(rig: Rig, image: Path, ssh_port: int) -> None:
    shutil.copyfile(image / "rig_key", rig.dir / "rig_key")
    (rig.dir / "rig_key").chmod(0o600)
    shutil.copyfile(image / "known_hosts", rig.dir / "known_hosts")
    rig.ssh_config.write_text(
        "# the rig's way into the appliance VM (tests/vm/rig.py): root, the rig's own key, the\n"
        "# guest's host key pinned, one connection shared by every command\n"
        "Host magicstick-vm\n"
        f"  HostName 127.0.0.1\n  Port {ssh_port}\n  User root\n"
        f"  IdentityFile {rig.dir / 'rig_key'}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {rig.dir / 'known_hosts'}\n  HostKeyAlias magicstick-vm\n"
        "  StrictHostKeyChecking yes\n  BatchMode yes\n  LogLevel ERROR\n"
        "  ConnectTimeout 10\n  ServerAliveInterval 5\n  ServerAliveCountMax 3\n"
        f"  ControlMaster auto\n  ControlPath {control_path(rig)}\n  ControlPersist 300\n")


def end_ssh(rig: Rig) -> None:
    if rig.ssh_config.exists():
        with contextlib.suppress(RigError):
            run(["ssh", "-F", str(rig.ssh_config), "-O", "exit", "magicstick-vm"], timeout=10,
                check=False)


def write_executables(rig: Rig) -> None:
    guest_exe = rig.dir / "guest"
    guest_exe.write_text(
        "#!/usr/bin/env bash\n"
        "# guest CMD [ARG...]: CMD as root in the appliance VM (tests/vm/rig.py); its stdout,\n"
        "# stderr and exit code pass through (255: the VM did not answer)\n"
        '[ $# -gt 0 ] || { echo "usage: $0 CMD [ARG...]" >&2; exit 2; }\n'
        f"exec ssh -F {shlex.quote(str(rig.ssh_config))} magicstick-vm -- "
        '"$(printf \'%q \' "$@")"\n')
    power_exe = rig.dir / "power"
    power_exe.write_text(
        "#!/bin/sh\n"
        "# power cut | on | state | wait-boot OLD_BOOT_ID [SECONDS] (tests/vm/rig.py)\n"
        f"cd {shlex.quote(str(REPO))} && exec env PYTHONPATH={shlex.quote(str(REPO))} "
        f"{shlex.quote(sys.executable)} -m tests.vm.rig power {shlex.quote(str(rig.dir))} "
        '"$@"\n')
    for exe in (guest_exe, power_exe):
        exe.chmod(0o755)
