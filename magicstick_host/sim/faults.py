"""Fault injection for the simulated host: named faults in `host.faults`, and sysfs write faults.

Named faults (strings in `Host.faults`, i.e. `.magicstick-sim/host.json`):
- `shutdown` (persistent): every `shutdown` command fails (exit 1) until the entry is removed.
- `apt-fails` (one-shot): the prepare playbook fails at "Install the approved kernel packages"
  with a dpkg error, exit 2, nothing installed.
- `package-unavailable` (one-shot): the pinned kernel meta version is no longer in the archive
  (`E: Version '...' for '...' was not found`), exit 2, nothing installed.
- `apt-crash-halfway` (one-shot): the prepare playbook installs the kernel image, its modules and
  the /boot files, leaves the meta package(s) `install ok half-configured` at their old version,
  and then the process running it dies: `SimulatedCrash` is raised out of `SimRunner.run`.
- `memory-playbook-fails` (one-shot): the memory playbook fails before writing anything, exit 2.
- `gpu-publish-fails` (one-shot): the GPU evidence publisher exits 1.
- `carveout-write` (persistent; set by `break_carveout_write`, cleared by
  `repair_carveout_write`): the worker's write to `uma/carveout` fails; see there.

A one-shot fault is removed from host.json when it fires and the firing is appended to the
effects log as `{"effect": "fault", "fault": NAME, ...}`, so a retry of the same step succeeds
and a test can see both the fault and the retry. Put the name in twice to make it fire twice.
"""

from __future__ import annotations

import array
import atexit
import contextlib
import fcntl
import os
from pathlib import Path

from magicstick_host.sim.model import Host
from magicstick_host.static import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Literal

STRIX_ADDR = "0000:c5:00.0"

SHUTDOWN = "shutdown"
APT_FAILS = "apt-fails"
PACKAGE_UNAVAILABLE = "package-unavailable"
APT_CRASH_HALFWAY = "apt-crash-halfway"
MEMORY_PLAYBOOK_FAILS = "memory-playbook-fails"
GPU_PUBLISH_FAILS = "gpu-publish-fails"
CARVEOUT_WRITE = "carveout-write"
ONE_SHOT = (
    APT_FAILS,
    PACKAGE_UNAVAILABLE,
    APT_CRASH_HALFWAY,
    MEMORY_PLAYBOOK_FAILS,
    GPU_PUBLISH_FAILS,
)
PERSISTENT = (SHUTDOWN, CARVEOUT_WRITE)

_FS_IOC_GETFLAGS = 0x80086601
_FS_IOC_SETFLAGS = 0x40086602
_FS_IMMUTABLE_FL = 0x10


class SimulatedCrash(BaseException):
    """The process running a simulated command died (e.g. killed half-way through apt).

    A BaseException, so no `except Exception` in the product can swallow it; tests catch it the
    way they would see a killed process, then run the next tick as the restarted worker would.
    """


def take_one_shot(host: Host, name: str) -> bool:
    """True if the one-shot fault `name` is set; it is removed from `host` (the caller writes
    the host and records the firing)."""
    if name not in host.faults:
        return False
    host.faults.remove(name)
    return True


def carveout_path(root: Path, address: str) -> Path:
    return Path(root) / "sys/devices/pci0000:00" / address / "uma/carveout"


def break_carveout_write(
    root: Path, address: str = STRIX_ADDR, *, how: Literal["immutable", "directory"] = "immutable"
) -> None:
    """Make the worker's write to `<address>/uma/carveout` fail.

    - `immutable` (default): the file keeps its content and stays readable (the worker's check
      of the current index passes), but it is marked immutable (FS_IMMUTABLE_FL), so opening it
      for writing fails with EPERM ("Operation not permitted"), even as root. This needs
      CAP_LINUX_IMMUTABLE and a file system with the flag (ext4, xfs, btrfs, tmpfs on Linux
      >= 6.0); without them it raises OSError and changes nothing, so a test can skip. The flag
      is cleared again by `repair_carveout_write` and, for what is left, when the process exits
      (otherwise nobody, root included, could delete the test's directory).
    - `directory` (portable): the file becomes a directory, so a write fails with EISDIR; but a
      read fails too ("is a directory"), so the worker stops at its check of the current index,
      before writing: it models a broken attribute rather than a refused write.

    The simulator leaves the path alone while broken (`carveout-write` in host.faults), boots
    included, until `repair_carveout_write`. The selection stays the one before the break.
    """
    from magicstick_host.sim.writer import load_host, write_host

    path = carveout_path(root, address)
    if not path.is_file() or path.is_symlink():
        raise FileNotFoundError(f"{path}: no carve-out control to break")
    host = load_host(root)
    if how == "immutable":
        _set_immutable(path, True)
        _IMMUTABLE.add(path.absolute())
    else:
        path.unlink()
        path.mkdir()
    if CARVEOUT_WRITE not in host.faults:
        host.faults.append(CARVEOUT_WRITE)
    write_host(host, root)


def repair_carveout_write(root: Path, address: str = STRIX_ADDR) -> None:
    """Undo `break_carveout_write`: a plain, writable file with the model's selection again."""
    from magicstick_host.sim.writer import load_host, write_host

    path = carveout_path(root, address)
    host = load_host(root)
    if path.is_dir() and not path.is_symlink():
        import shutil  # only here: the simulated tick imports this module and repairs nothing

        shutil.rmtree(path)
    elif path.is_file():
        with contextlib.suppress(OSError):
            _set_immutable(path, False)
        _IMMUTABLE.discard(path.absolute())
        os.unlink(path)
    host.faults = [f for f in host.faults if f != CARVEOUT_WRITE]
    write_host(host, root)


_IMMUTABLE: set[Path] = set()


@atexit.register
def _release_immutable() -> None:
    for path in list(_IMMUTABLE):
        with contextlib.suppress(OSError):
            _set_immutable(path, False)
    _IMMUTABLE.clear()


def _set_immutable(path: Path, on: bool) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        flags = array.array("l", [0])
        fcntl.ioctl(fd, _FS_IOC_GETFLAGS, flags, True)
        flags[0] = flags[0] | _FS_IMMUTABLE_FL if on else flags[0] & ~_FS_IMMUTABLE_FL
        fcntl.ioctl(fd, _FS_IOC_SETFLAGS, flags, True)
    finally:
        os.close(fd)
