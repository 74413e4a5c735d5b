"""The lock port: the maintenance lock shared with host convergence.

`maintenance.lock` is also taken by ansible-pull (through `flock(1)`) and every host-changing
service, so this must be a real flock(2) lock on that exact path: `fcntl.flock(fd, LOCK_EX |
LOCK_NB)` on a descriptor of the file, opened with O_NOFOLLOW, and the file is never unlinked
on release (waiters must share one inode). This is what filelock's UnixFileLock does; the
worker no longer imports filelock for it, because its newer releases cost about a tenth of the
idle tick's CPU to import (asyncio and threading machinery) and three of their features (soft
locks, thread-local state, deleting the file) had to be switched off here anyway. The tests
still hold this lock against filelock and flock(1).

Acquisition never waits. A held lock raises LockBusyError: the tick exits quietly and the timer
tries again 15 s later.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path
from types import TracebackType
from typing import Protocol

from magicstick_host.errors import LockBusyError, UnsafePathError, local_file_error


class Lock(Protocol):
    def __enter__(self) -> Lock: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class MaintenanceLock:
    def __init__(self, path: Path, *, owner_uid: int | None = None) -> None:
        self.path = path
        self.owner_uid = os.geteuid() if owner_uid is None else owner_uid
        self._fd: int | None = None

    def __enter__(self) -> MaintenanceLock:
        if self._fd is not None:
            raise RuntimeError(f"{self.path}: already held by this MaintenanceLock")
        try:
            self._check()
        except OSError as exc:
            raise local_file_error(exc, self.path, "cannot be checked") from exc
        try:
            fd = os.open(
                self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
            )
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafePathError(f"{self.path}: is a symlink; refusing to lock it") from None
            raise local_file_error(exc, self.path, "cannot be opened") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise LockBusyError(
                    f"{self.path}: held by another tick or by host convergence"
                ) from None
            raise local_file_error(exc, self.path, "cannot be locked") from exc
        self._fd = fd
        return self

    @property
    def fd(self) -> int:
        """The locked descriptor, to hand down to a child that must keep holding the lock
        (host convergence: `MAGICSTICK_CONVERGE_LOCK_FD`). flock(2) belongs to the open file,
        so a child that inherited it keeps the lock held even if this process dies."""
        if self._fd is None:
            raise RuntimeError(f"{self.path}: not held")
        return self._fd

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the last descriptor of the open file releases the flock

    def _check(self) -> None:
        """Refuse an unsafe lock directory or lock file before locking.

        Checking first and opening afterwards is not a race here: the directory must be 0700 and
        owned by us (verified below), so no other account can replace the file between this check
        and the open below, which also uses O_NOFOLLOW.
        """
        directory = self.path.parent
        try:
            dst = os.lstat(directory)
        except FileNotFoundError:
            raise UnsafePathError(f"{directory}: lock directory is missing") from None
        if not stat.S_ISDIR(dst.st_mode):
            raise UnsafePathError(f"{directory}: is not a directory (symlink?)")
        if dst.st_uid != self.owner_uid or stat.S_IMODE(dst.st_mode) & 0o077:
            raise UnsafePathError(
                f"{directory}: lock directory must be 0700 owned by uid {self.owner_uid} "
                f"(is {stat.S_IMODE(dst.st_mode):04o}, uid {dst.st_uid})"
            )
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return  # __enter__ creates it with O_NOFOLLOW, mode 0600
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafePathError(f"{self.path}: is a symlink; refusing to lock it") from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise UnsafePathError(f"{self.path}: is not a regular file")
            if st.st_uid != self.owner_uid:
                raise UnsafePathError(
                    f"{self.path}: owned by uid {st.st_uid}, expected {self.owner_uid}"
                )
            if stat.S_IMODE(st.st_mode) & ~0o600:
                # flock(1) in the convergence unit may have created it 0644; it is empty and ours,
                # so tighten it rather than block every tick forever
                os.fchmod(fd, 0o600)
        finally:
            os.close(fd)
