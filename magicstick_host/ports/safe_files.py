"""Opening, reading and writing the worker's own files: never through a symlink, never blocked
by a FIFO, and each file checked against its role (ports/state_paths.py) before it is used.

Every refusal is an UnsafePathError (or, for an unwritable path, a LocalFileError) whose one-line
message ends with the fix: the command to run, or `magicstick-host recover`.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from magicstick_host.errors import LocalFileError, UnsafePathError, local_file_error
from magicstick_host.ports.state_paths import PathProblem, path_problem, writable_problem

if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")


def local_faults(method: Callable[..., T]) -> Callable[..., T]:
    """For the methods of a store with a `state_path`: an OSError the system raises while it
    works (full disk, read-only filesystem, immutable file, a directory where a file should
    be) becomes a LocalFileError naming the path (exit 74), never an internal error. What was
    saved before stays as it was."""

    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> T:
        try:
            return method(self, *args, **kwargs)
        except OSError as exc:
            raise local_file_error(exc, self.state_path, "cannot be written") from exc

    return guarded


def _refusal(problem: PathProblem) -> str:
    fix = f"`{problem.fix}`" if problem.fix else "`magicstick-host recover` at the console"
    return f"{problem.message}; fix: {fix}"


def check(path: Path, st: os.stat_result, *, role: str, owner_uid: int) -> None:
    problem = path_problem(path, st, role=role, owner_uid=owner_uid)
    if problem is not None:
        raise UnsafePathError(_refusal(problem))


def refuse_unwritable(path: Path, *, role: str) -> None:
    """A path the worker must write but the system will not let it: read-only or immutable."""
    problem = writable_problem(path, role=role)
    if problem is not None:
        raise LocalFileError(_refusal(problem))


def ensure_dir(path: Path, *, parents: bool, role: str, owner_uid: int) -> None:
    """Create a 0700 directory if missing; refuse an unsafe one."""
    try:
        os.mkdir(path, 0o700)
        os.chmod(path, 0o700)  # the umask may have narrowed it; never widened
    except FileExistsError:
        pass
    except FileNotFoundError:
        if not parents:
            raise
        path.parent.mkdir(parents=True, exist_ok=True)
        ensure_dir(path, parents=False, role=role, owner_uid=owner_uid)
        return
    check(path, os.lstat(path), role=role, owner_uid=owner_uid)


def open_checked(
    path: Path, flags: int, *, role: str, owner_uid: int, create: bool = False
) -> int:
    """Open with O_NOFOLLOW and check the result; a new file gets 0600."""
    flags |= os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_CREAT | os.O_EXCL if create else 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW: the final component is a symlink
            raise UnsafePathError(f"{path}: is a symlink; refusing to use it") from None
        if exc.errno in (errno.EISDIR, errno.ENXIO):  # a directory; a FIFO without a reader
            raise UnsafePathError(f"{path}: is not a regular file") from None
        raise
    try:
        if create:
            os.fchmod(fd, 0o600)
        check(path, os.fstat(fd), role=role, owner_uid=owner_uid)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_or_create(path: Path, flags: int, *, role: str, owner_uid: int) -> int:
    """Open an existing file, or create it (0600, then fsync the directory)."""
    try:
        return open_checked(path, flags, role=role, owner_uid=owner_uid)
    except FileNotFoundError:
        pass
    try:
        fd = open_checked(path, flags, role=role, owner_uid=owner_uid, create=True)
    except FileExistsError:  # a concurrent creator won; use its file
        return open_checked(path, flags, role=role, owner_uid=owner_uid)
    fsync_dir(path.parent)
    return fd


def read_regular(path: Path, limit: int | None, *, tail: int | None = None) -> bytes:
    """A regular file's bytes (its last `tail` bytes when given), for viewing: a symlink or
    any other file type is refused before reading, without blocking. Owner and mode are not
    checked here (the viewer reports them separately)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePathError(f"{path}: is a symlink; refusing to read it") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePathError(f"{path}: is not a regular file; refusing to read it")
        if tail is not None and st.st_size > tail:
            os.lseek(fd, st.st_size - tail, os.SEEK_SET)
        return read_all(fd, limit)
    finally:
        os.close(fd)


def read_all(fd: int, limit: int | None) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
        total += len(chunk)
        if limit is not None and total > limit:
            raise OSError(f"larger than {limit} bytes")
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
