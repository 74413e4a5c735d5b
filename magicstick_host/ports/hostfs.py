"""The host filesystem port: every read of the host goes through here, under a root.

A host path `/x/y` is read as `<root>/x/y`. Symlinks are resolved component by component
*inside* the root: an absolute target is re-rooted, and a `..` that would climb above the root
makes the path unreadable ("symlink escapes root") instead of silently clamping, so a broken
simulated tree shows up as an unknown rather than as a plausible wrong value.

Every failure is one typed `HostReadError(path, reason)`. Callers (the collector) turn it into
an `Unknown`; nothing else escapes.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import struct
from typing import Protocol

DEFAULT_MAX_BYTES = 1024 * 1024
# struct flock (fcntl(2)): l_type, l_whence, l_start, l_len, l_pid, padded to its C size (32
# bytes on the 64-bit Linux ABIs: two shorts, two off_t, a pid_t)
_FLOCK = "@hhqqi"
_FLOCK_SIZE = -(-struct.calcsize(_FLOCK) // 8) * 8
# /var/lib/dpkg/status is several MB on a real host
DPKG_STATUS_MAX_BYTES = 64 * 1024 * 1024
# the kernel's own limit (MAXSYMLINKS); more hops than this is treated as a loop
MAX_SYMLINK_HOPS = 40

MISSING = "missing"


class HostReadError(Exception):
    """A host path could not be read. `reason` is short and stable, e.g. "missing"."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

    @property
    def missing(self) -> bool:
        return self.reason == MISSING


class HostFS(Protocol):
    @property
    def is_real_root(self) -> bool:
        """True when the root is `/`: only then do process-level facts (uname) apply."""
        ...

    def read_text(self, path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
        """The whole file as UTF-8. Raises HostReadError (missing, too large, ...)."""
        ...

    def exists(self, path: str) -> bool:
        """False only when the path is absent. Raises HostReadError when existence cannot be
        established (permission denied, symlink loop or escape)."""
        ...

    def is_dir(self, path: str) -> bool:
        """Like `exists`, and the path is a directory."""
        ...

    def is_socket(self, path: str) -> bool:
        """Like `exists`, and the path (symlinks followed within the root) is a socket."""
        ...

    def list_dir(self, path: str) -> list[str]:
        """Sorted entry names. Raises HostReadError (missing, not a directory, ...)."""
        ...

    def readlink_basename(self, path: str) -> str | None:
        """The last component of a symlink's target (e.g. a PCI `driver` link); None when
        the link is absent. Raises HostReadError when it exists but is not a symlink."""
        ...

    def lock_holder(self, path: str) -> int | None:
        """Who holds a write-conflicting fcntl lock on the file (dpkg's and apt's locks): None
        when nobody does or the file is absent; the holder's pid, or 0 when the kernel does
        not show it (an open file description lock). Takes no lock. Raises HostReadError when
        it cannot be told (permission denied, not a regular file, ...)."""
        ...

    def machine(self) -> str:
        """`uname -m` of this process. Meaningful only when `is_real_root`."""
        ...


def _reason(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return MISSING
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, NotADirectoryError):
        return "not a directory"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    if exc.errno == errno.ELOOP:
        return "symlink loop"
    return (exc.strerror or type(exc).__name__).lower()


def _split(path: str) -> list[str]:
    return [part for part in path.split("/") if part not in ("", ".")]


class RootedHostFS:
    def __init__(self, root: str) -> None:
        self._root = os.path.realpath(root)

    @property
    def root(self) -> str:
        return self._root

    @property
    def is_real_root(self) -> bool:
        return self._root == "/"

    def _resolve(self, path: str) -> str:
        """The real path of host `path` under the root, all symlinks resolved within it."""
        pending = list(reversed(_split(path)))
        done: list[str] = []
        hops = 0
        while pending:
            part = pending.pop()
            if part == "..":
                if not done:
                    reason = "symlink escapes root" if hops else "path escapes root"
                    raise HostReadError(path, reason)
                done.pop()
                continue
            real = os.path.join(self._root, *done, part)
            try:
                st = os.lstat(real)
            except OSError as exc:
                raise HostReadError(path, _reason(exc)) from None
            if not stat.S_ISLNK(st.st_mode):
                done.append(part)
                continue
            hops += 1
            if hops > MAX_SYMLINK_HOPS:
                raise HostReadError(path, "symlink loop")
            try:
                target = os.readlink(real)
            except OSError as exc:
                raise HostReadError(path, _reason(exc)) from None
            if target.startswith("/"):
                done = []
            pending.extend(reversed(_split(target)))
        return os.path.join(self._root, *done)

    def read_text(self, path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
        real = self._resolve(path)
        try:
            # O_NONBLOCK: a FIFO planted where a file belongs must not hang the collector
            fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise HostReadError(path, _reason(exc)) from None
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise HostReadError(path, "is a directory")
            if not stat.S_ISREG(st.st_mode):
                raise HostReadError(path, "not a regular file")
            # sysfs and procfs report size 0 or 4096 whatever the content: read, don't stat
            chunks: list[bytes] = []
            total = 0
            while True:
                chunk = os.read(fd, min(65536, max_bytes + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                if total > max_bytes:
                    raise HostReadError(path, "too large")
        except OSError as exc:
            raise HostReadError(path, _reason(exc)) from None
        finally:
            os.close(fd)
        try:
            return b"".join(chunks).decode("utf-8")
        except UnicodeDecodeError:
            raise HostReadError(path, "not valid UTF-8") from None

    def write_value(self, path: str, text: str) -> None:
        """Write one value to an existing file (a sysfs attribute), as `echo v > path` does.

        The single write the worker makes to the host tree directly; it never creates files.
        Raises HostReadError (the port's one error type) with the reason.
        """
        real = self._resolve(path)
        try:
            fd = os.open(real, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise HostReadError(path, _reason(exc)) from None
        try:
            os.write(fd, text.encode("utf-8"))
        except OSError as exc:
            raise HostReadError(path, _reason(exc)) from None
        finally:
            os.close(fd)

    def _resolve_existing(self, path: str) -> str | None:
        """The real path, or None when a component is missing or not a directory (simply "no
        such path"); any other failure is raised."""
        try:
            return self._resolve(path)
        except HostReadError as exc:
            if exc.reason in (MISSING, "not a directory"):
                return None
            raise

    def _probe(self, path: str) -> os.stat_result | None:
        real = self._resolve_existing(path)
        if real is None:
            return None
        try:
            return os.stat(real)
        except OSError as exc:
            raise HostReadError(path, _reason(exc)) from None

    def exists(self, path: str) -> bool:
        return self._probe(path) is not None

    def is_dir(self, path: str) -> bool:
        st = self._probe(path)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def is_socket(self, path: str) -> bool:
        st = self._probe(path)
        return st is not None and stat.S_ISSOCK(st.st_mode)

    def list_dir(self, path: str) -> list[str]:
        real = self._resolve(path)
        try:
            return sorted(os.listdir(real))
        except OSError as exc:
            raise HostReadError(path, _reason(exc)) from None

    def readlink_basename(self, path: str) -> str | None:
        parts = _split(path)
        if not parts or parts[-1] == "..":
            raise HostReadError(path, "not a symlink")
        try:
            parent = self._resolve("/".join(parts[:-1]))
        except HostReadError as exc:
            if exc.reason in (MISSING, "not a directory"):
                return None
            raise HostReadError(path, exc.reason) from None
        real = os.path.join(parent, parts[-1])
        try:
            st = os.lstat(real)
            if not stat.S_ISLNK(st.st_mode):
                raise HostReadError(path, "not a symlink")
            target = os.readlink(real)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise HostReadError(path, _reason(exc)) from None
        target_parts = _split(target)
        name = target_parts[-1] if target_parts else ""
        if name in ("", ".."):
            raise HostReadError(path, "bad symlink target")
        return name

    def lock_holder(self, path: str) -> int | None:
        # F_GETLK, as apt's own check does with F_SETLK but taking nothing: would a write lock
        # on the whole file conflict, and with whom?
        real = self._resolve_existing(path)
        if real is None:
            return None
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise HostReadError(path, _reason(exc)) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise HostReadError(path, "not a regular file")
            query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
            answer = fcntl.fcntl(fd, fcntl.F_GETLK, query.ljust(_FLOCK_SIZE, b"\0"))
        except OSError as exc:
            raise HostReadError(path, _reason(exc)) from None
        finally:
            os.close(fd)
        kind, _whence, _start, _length, pid = struct.unpack(
            _FLOCK, answer[: struct.calcsize(_FLOCK)])
        if kind == fcntl.F_UNLCK:
            return None
        return pid if pid > 0 else 0

    def machine(self) -> str:
        return os.uname().machine
