"""The convergence playbook (`converge.yml`) on a simulated host, for the gate's tests and demos.

The real roles (playbooks/roles/k3s, nvidia_display) are tested with the real ansible-playbook
(tests/playbooks/test_converge.py). Here only what the gate needs is simulated:
- on an NVIDIA display host (a VGA-compatible controller, class 0x0300: not an H100/H200 3D
  controller; domain/convergence/display.py), the managed nvidia-drm file
  (`etc/modprobe.d/90-magicstick-nvidia-drm.conf`) is written: "changed" on the first run, "ok"
  on the next (so `status` shows the changed tasks of a run);
- `MAGICSTICK_CONVERGE_LOCK_FD` must be in the environment, as the real playbook requires;
- faults (in `host.faults`): `converge-fails` (one-shot) fails the play at its first task;
  `converge-hold` (persistent) keeps the play running until `release_converge(root)` (or
  `HOLD_TIMEOUT_S`), so a test can look at the host while convergence holds the lock.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from magicstick_host.domain.convergence.display import is_nvidia_display
from magicstick_host.sim.ansible import PlayLog
from magicstick_host.sim.faults import take_one_shot
from magicstick_host.sim.model import Host

if TYPE_CHECKING:
    from typing import Any

CONVERGE_FAILS = "converge-fails"
CONVERGE_HOLD = "converge-hold"
RELEASE_FILE = ".magicstick-sim/converge-release"
HOLD_TIMEOUT_S = 60.0
LOCK_FD_ENV = "MAGICSTICK_CONVERGE_LOCK_FD"
NVIDIA_DRM_CONF = "etc/modprobe.d/90-magicstick-nvidia-drm.conf"
NVIDIA_DRM_TEXT = (
    "# managed by magicstick-host convergence: nvidia-drm early, with the console; do not edit\n"
    "options nvidia-drm modeset=1 fbdev=1\n"
)


def release_converge(root: Path) -> None:
    """Let a held simulated convergence finish."""
    (Path(root) / RELEASE_FILE).write_text("release\n", encoding="utf-8")


def _hold(root: Path) -> None:
    deadline = time.monotonic() + HOLD_TIMEOUT_S
    release = root / RELEASE_FILE
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    release.unlink(missing_ok=True)


def run_converge(
    host: Host, root: Path, variables: dict[str, Any], env: Mapping[str, str] | None
) -> tuple[PlayLog, list[str]]:
    """Change `host` as the playbook would. Returns the log and the faults that fired."""
    log = PlayLog("Converge the magicstick base host")
    if LOCK_FD_ENV not in (env or {}):
        log.task("converge : Refuse to run outside magicstick-host converge", "failed",
                 {"msg": f"{LOCK_FD_ENV} is not set: run `magicstick-host converge`"})
        return log, []
    if take_one_shot(host, CONVERGE_FAILS):
        log.task("k3s : Check the K3s version pin", "failed",
                 {"msg": "simulated convergence failure"})
        return log, [CONVERGE_FAILS]
    log.task("k3s : Check the K3s version pin", "ok")
    if CONVERGE_HOLD in host.faults:
        _hold(root)
    nvidia = any(is_nvidia_display(d.vendor, d.pci_class) for d in host.pci)
    if not nvidia:
        log.task("nvidia_display : Load nvidia-drm early with the console", "skipping")
        return log, []
    status = "ok" if host.modprobe_files.get(NVIDIA_DRM_CONF) == NVIDIA_DRM_TEXT else "changed"
    host.modprobe_files[NVIDIA_DRM_CONF] = NVIDIA_DRM_TEXT
    log.task("nvidia_display : Load nvidia-drm early with the console", status)
    return log, []
