"""A rig directory (tests/vm): its files, and the processes the rig started for it.

Everything the rig starts names DIR in its command line (qemu's disk and pid file, the
apiserver runner's directory, the ssh connection's config), so the processes of a DIR are found
by their command lines, whatever pid files say.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CACHE = Path(os.environ.get("MAGICSTICK_CACHE_DIR", Path.home() / ".cache" / "magicstick-host"))


class RigError(Exception):
    """One line for the person at the console; exit 1."""


def log(text: str) -> None:
    print(f"[vm] {text}", file=sys.stderr, flush=True)


class Rig:
    """A rig directory and what it holds."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory.resolve()

    @property
    def vm_json(self) -> Path:
        return self.dir / "vm.json"

    @property
    def disk(self) -> Path:
        return self.dir / "disk.qcow2"

    @property
    def console(self) -> Path:
        return self.dir / "console.log"

    @property
    def qemu_pid(self) -> Path:
        return self.dir / "qemu.pid"

    @property
    def qemu_json(self) -> Path:
        return self.dir / "qemu.json"

    @property
    def ssh_config(self) -> Path:
        return self.dir / "ssh_config"

    @property
    def api_dir(self) -> Path:
        return self.dir / "apiserver"

    def kubeconfig(self, user: str) -> Path:
        return self.api_dir / f"{user}.kubeconfig"

    def config(self) -> dict[str, Any]:
        try:
            loaded = json.loads(self.vm_json.read_text())
        except (OSError, ValueError) as exc:
            raise RigError(f"{self.vm_json}: not a rig's vm.json ({exc})") from None
        if not isinstance(loaded, dict):
            raise RigError(f"{self.vm_json}: not a rig's vm.json")
        return loaded

    # -- processes ---------------------------------------------------------------------------

    def processes(self) -> list[tuple[int, list[str]]]:
        """Every process the rig started for this DIR: its command line names DIR, and it is
        qemu, ssh, the apiserver runner or the apiserver itself (never the caller's make or
        shell, whose command lines name DIR too)."""
        found = []
        marks = (str(self.dir), control_path(self))
        ancestors = _ancestors()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) in ancestors:
                continue
            try:
                argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
            except OSError:
                continue
            if not argv or not any(mark in arg for arg in argv for mark in marks):
                continue
            exe = Path(argv[0]).name
            # ssh's shared connection retitles itself "ssh: <control path> [mux]"
            ours = (exe.startswith("qemu-system") or exe in ("ssh", "kubeserver")
                    or argv[0].startswith("ssh: ") or "tests.vm.apiserver" in argv)
            if ours:
                found.append((int(entry.name), argv))
        return found

    def qemu_running(self) -> int | None:
        for pid, argv in self.processes():
            if Path(argv[0]).name.startswith("qemu-system"):
                return pid
        return None

    def runner_pid(self) -> int | None:
        for pid, argv in self.processes():
            if "tests.vm.apiserver" in argv:
                return pid
        return None


def _ancestors() -> set[int]:
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie nobody reaps is gone for our purposes, but only once all its threads are: a
    # killed qemu's leader turns Z while its other threads still tear down and hold the disk
    # image's lock (CI met "Is another process using the image" right after a cut).
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return False
    for task in tasks:
        with contextlib.suppress(OSError, IndexError):
            if (task / "stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                return True
    return False


def wait_gone(pids: Sequence[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    left = [p for p in pids if _alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [p for p in left if _alive(p)]
    return left


def send_signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def control_path(rig: Rig) -> str:
    path = str(rig.dir / "ssh.ctl")
    if len(path) < 90:  # a unix socket path: at most 107 bytes, and ssh adds a suffix
        return path
    return f"/tmp/magicstick-vm-{hashlib.sha256(path.encode()).hexdigest()[:16]}.ctl"
