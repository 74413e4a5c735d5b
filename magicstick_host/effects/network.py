"""The network trial's side effects (network.md, "The trial"). Each does what it is told and
decides nothing; each returns (ok, detail) or raises only for a crash.

- `backup_netplan`: copy every /etc/netplan/*.yaml into the store's backup (complete or none);
- `write_managed`: write /etc/netplan/90-magicstick-network.yaml (0600), then remove the
  backed-up files it replaces;
- `netplan_generate` (30 s) and `netplan_apply` (45 s);
- `restore_netplan`: put the backed-up files back byte for byte (with their modes) and remove
  the managed file unless it was itself backed up;
- `arm_rollback_timer` / `disarm_rollback_timer`: the independent local deadline, a transient
  systemd timer (`systemd-run --on-active=`) that starts the installed
  `magicstick-host-network-rollback.service` when the confirmation window ends, whatever the
  tick and Kubernetes do;
- `scan_wifi`: `iw dev <if> scan` (25 s).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from magicstick_host.ports.host_files import HostWriteError, RootedHostFiles
from magicstick_host.ports.network_store import NetworkStore, NetworkStoreError, sha256_bytes
from magicstick_host.ports.runner import NOT_FOUND, TIMED_OUT, CommandResult, CommandRunner

if TYPE_CHECKING:
    from typing import Any

# the same paths as domain/network/evidence.py (effects take no domain module; a test checks)
NETPLAN_DIR = "/etc/netplan"
MANAGED_NETPLAN_NAME = "90-magicstick-network.yaml"
MAX_NETPLAN_FILE_BYTES = 256 * 1024
GENERATE_TIMEOUT_S = 30.0
APPLY_TIMEOUT_S = 45.0
ROLLBACK_UNIT = "magicstick-host-network-rollback"
# a backed-up file: (name, sha256, mode)
Backup = tuple[str, str, int]
SCAN_TIMEOUT_S = 25.0
SYSTEMCTL_TIMEOUT_S = 15.0
MANAGED_MODE = 0o600


def present_netplan_files(files: RootedHostFiles) -> dict[str, str]:
    """name → sha256 of every *.yaml now in /etc/netplan (a symlink counts as "symlink")."""
    present: dict[str, str] = {}
    for name in files.list_names(NETPLAN_DIR, ".yaml"):
        try:
            present[name] = sha256_bytes(
                files.read(NETPLAN_DIR, name, MAX_NETPLAN_FILE_BYTES).data
            )
        except HostWriteError as exc:
            present[name] = exc.reason
    return present


def backup_netplan(
    files: RootedHostFiles, store: NetworkStore
) -> tuple[list[Backup] | None, str]:
    try:
        copies = [files.read(NETPLAN_DIR, name, MAX_NETPLAN_FILE_BYTES)
                  for name in files.list_names(NETPLAN_DIR, ".yaml")]
        store.save_backup(copies)
    except (HostWriteError, NetworkStoreError, OSError) as exc:
        return None, f"backing up {NETPLAN_DIR} failed: {exc}"
    backed = [(c.name, sha256_bytes(c.data), c.mode) for c in copies]
    return backed, f"backed up {len(backed)} netplan file(s)"


def write_managed(
    files: RootedHostFiles, document: dict[str, Any], replaced: Sequence[str]
) -> tuple[str | None, str]:
    """Write the managed file (`document` as netplan YAML, 0600); returns its sha256, or None
    with the reason."""
    from magicstick_host.ports.netplan_yaml import render_managed  # YAML only when writing

    data = render_managed(document).encode("utf-8")
    try:
        files.sweep_temp_files(NETPLAN_DIR)
        files.write(NETPLAN_DIR, MANAGED_NETPLAN_NAME, data, MANAGED_MODE)
        files.remove(NETPLAN_DIR, [n for n in replaced if n != MANAGED_NETPLAN_NAME])
    except HostWriteError as exc:
        return None, f"writing {NETPLAN_DIR} failed: {exc}"
    others = len([n for n in replaced if n != MANAGED_NETPLAN_NAME])
    return sha256_bytes(data), (f"wrote {NETPLAN_DIR}/{MANAGED_NETPLAN_NAME}; removed {others} "
                                "file(s) it replaces")


def restore_netplan(
    files: RootedHostFiles, store: NetworkStore, backup: Sequence[Backup]
) -> tuple[bool, str]:
    names = [name for name, _, _ in backup]
    try:
        saved = store.load_backup(names)
    except NetworkStoreError as exc:
        return False, f"the backup cannot be used: {exc}"
    for name, sha256, _ in backup:
        if sha256_bytes(saved[name]) != sha256:
            return False, f"the backup of {name} does not match its record"
    try:
        files.sweep_temp_files(NETPLAN_DIR)
        for name, _, mode in backup:
            files.write(NETPLAN_DIR, name, saved[name], mode)
        if MANAGED_NETPLAN_NAME not in names:
            files.remove(NETPLAN_DIR, [MANAGED_NETPLAN_NAME])
    except HostWriteError as exc:
        return False, f"restoring {NETPLAN_DIR} failed: {exc}"
    return True, f"restored {len(names)} netplan file(s) from the backup"


def _tool(result: CommandResult, what: str, timeout: float) -> tuple[bool, str]:
    if result.ok:
        return True, f"{what} succeeded"
    if result.returncode == TIMED_OUT:
        return False, f"{what} did not finish within {timeout:g} s"
    if result.returncode == NOT_FOUND:
        return False, f"{what}: the command is not installed"
    lines = (result.stderr or result.stdout).strip().splitlines()
    return False, f"{what} exited {result.returncode}: {lines[-1][:300] if lines else 'no output'}"


def netplan_generate(runner: CommandRunner) -> tuple[bool, str]:
    result = runner.run(["netplan", "generate"], timeout=GENERATE_TIMEOUT_S)
    return _tool(result, "netplan generate", GENERATE_TIMEOUT_S)


def netplan_apply(runner: CommandRunner) -> tuple[bool, str]:
    result = runner.run(["netplan", "apply"], timeout=APPLY_TIMEOUT_S)
    return _tool(result, "netplan apply", APPLY_TIMEOUT_S)


def rollback_timer_argv(seconds: float) -> list[str]:
    """A transient timer for the installed rollback service: no command, so systemd-run only
    creates `<unit>.timer` (in /run: a restart removes it; the boot recovery takes over)."""
    return [
        "systemd-run",
        f"--unit={ROLLBACK_UNIT}",
        f"--on-active={max(1, round(seconds))}s",
        "--timer-property=AccuracySec=1s",
        # unloaded once it has fired, so the next trial can create it again
        "--timer-property=RemainAfterElapse=no",
        "--description=magicstick-host: roll back an unconfirmed network change",
    ]


def arm_rollback_timer(runner: CommandRunner, seconds: float) -> tuple[bool, str]:
    # a timer left from an earlier trial would make systemd-run fail: stop it first
    runner.run(["systemctl", "stop", f"{ROLLBACK_UNIT}.timer"], timeout=SYSTEMCTL_TIMEOUT_S)
    result = runner.run(rollback_timer_argv(seconds), timeout=SYSTEMCTL_TIMEOUT_S)
    return _tool(result, f"arming the rollback timer ({seconds:g} s)", SYSTEMCTL_TIMEOUT_S)


def disarm_rollback_timer(runner: CommandRunner) -> tuple[bool, str]:
    result = runner.run(["systemctl", "stop", f"{ROLLBACK_UNIT}.timer"],
                        timeout=SYSTEMCTL_TIMEOUT_S)
    return _tool(result, "stopping the rollback timer", SYSTEMCTL_TIMEOUT_S)


def scan_wifi(runner: CommandRunner, interface: str) -> tuple[str | None, str]:
    """The raw `iw dev <if> scan` output, or None with the reason."""
    result = runner.run(["iw", "dev", interface, "scan"], timeout=SCAN_TIMEOUT_S)
    ok, detail = _tool(result, f"iw dev {interface} scan", SCAN_TIMEOUT_S)
    return (result.stdout if ok else None), detail

