"""The lock port: the maintenance lock shared with host convergence.

`maintenance.lock` is also taken by ansible-pull (through `flock(1)`) and every host-changing
service, so this must be a real flock(2) lock on that exact path: filelock's UnixFileLock is
`fcntl.flock(fd, LOCK_EX | LOCK_NB)` on a descriptor of the file, it opens with O_NOFOLLOW and
never unlinks the file on release (waiters must share one inode). We disable its soft-lock
fallback: a marker file would not exclude a `flock(1)` holder.

Acquisition never waits. A held lock raises LockBusyError: the tick exits quietly and the timer
tries again 15 s later.
"""

from __future__ import annotations

import errno
import inspect
import os
import stat
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from filelock import Timeout, UnixFileLock

from magicstick_host.errors import LockBusyError, UnsafePathError, local_file_error


class Lock(Protocol):
    def __enter__(self) -> Lock: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


# Ubuntu 24.04 ships filelock 3.13, which neither falls back to soft locks nor deletes the lock
# file, and has no switches for either; newer releases need them turned off explicitly.
_NEWER_FILELOCK_OPTIONS: dict[str, Any] = {
    name: value
    for name, value in (
        ("thread_local", False),
        ("fallback_to_soft", False),
        ("preserve_lock_file", True),
    )
    if name in inspect.signature(UnixFileLock.__init__).parameters
}


class MaintenanceLock:
    def __init__(self, path: Path, *, owner_uid: int | None = None) -> None:
        self.path = path
        self.owner_uid = os.geteuid() if owner_uid is None else owner_uid
        self._held: UnixFileLock | None = None

    def __enter__(self) -> MaintenanceLock:
        if self._held is not None:
            raise RuntimeError(f"{self.path}: already held by this MaintenanceLock")
        try:
            self._check()
        except OSError as exc:
            raise local_file_error(exc, self.path, "cannot be checked") from exc
        lock = UnixFileLock(str(self.path), timeout=0, mode=0o600, **_NEWER_FILELOCK_OPTIONS)
        try:
            lock.acquire()
        except Timeout:
            raise LockBusyError(
                f"{self.path}: held by another tick or by host convergence"
            ) from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafePathError(f"{self.path}: is a symlink; refusing to lock it") from None
            raise local_file_error(exc, self.path, "cannot be opened") from exc
        self._held = lock
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        held, self._held = self._held, None
        if held is not None:
            held.release()

    def _check(self) -> None:
        """Refuse an unsafe lock directory or lock file before locking.

        Checking first and opening afterwards is not a race here: the directory must be 0700 and
        owned by us (verified below), so no other account can replace the file between this check
        and filelock's open. filelock opens with O_NOFOLLOW, which also covers a symlink anyway.
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
            return  # filelock creates it with O_EXCL | O_NOFOLLOW, mode 0600
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
