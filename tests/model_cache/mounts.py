"""Real mounts under a temporary root, for the tests that need one (the tests run as root).

Through libc directly: the subprocess guard forbids running `mount`, and a mount is not a
command the worker ever runs.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MS_BIND = 4096
MNT_DETACH = 2
_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


@contextmanager
def mounted(target: Path, *, bind_from: Path | None = None) -> Iterator[Path]:
    """A tmpfs at `target`, or a bind mount of `bind_from` there; unmounted afterwards."""
    target.mkdir(parents=True, exist_ok=True)
    if bind_from is None:
        _check(_libc.mount(b"none", str(target).encode(), b"tmpfs", 0, None), f"tmpfs {target}")
    else:
        _check(_libc.mount(str(bind_from).encode(), str(target).encode(), None, MS_BIND, None),
               f"bind {bind_from} {target}")
    try:
        yield target
    finally:
        _check(_libc.umount2(str(target).encode(), MNT_DETACH), f"umount {target}")
