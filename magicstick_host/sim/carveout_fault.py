"""The `carveout-write` fault (sim/faults.py): the worker's write to `uma/carveout` made to fail,
and repaired again. Apart from the named faults because it loads and rewrites the host
(sim/writer.py), which itself knows the fault's name: so neither imports the other's module.
"""

from __future__ import annotations

import array
import atexit
import contextlib
import fcntl
import os
from pathlib import Path
from typing import TYPE_CHECKING

from magicstick_host.sim.faults import CARVEOUT_WRITE, STRIX_ADDR, carveout_path
from magicstick_host.sim.writer import load_host, write_host

if TYPE_CHECKING:
    from typing import Literal

_FS_IOC_GETFLAGS = 0x80086601
_FS_IOC_SETFLAGS = 0x40086602
_FS_IMMUTABLE_FL = 0x10


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
