"""Writing whole configuration files under the host root: the network trial's one seam into
`/etc/netplan` (the host filesystem port, hostfs.py, only reads, plus single sysfs values).

Every path is taken under the root without following a symlink anywhere below it (the
directories of `/etc/netplan` are real directories on every host this worker edits; a symlink
there is refused, not followed). A write goes to a temporary file in the same directory, is
fsynced, renamed into place and the directory fsynced, so after a power loss a file is either
its old or its new content. Failures are `HostWriteError(path, reason)`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from magicstick_host.lite_dataclasses import dataclass

TEMP_PREFIX = ".magicstick-tmp-"


class HostWriteError(Exception):
    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class HostFile:
    name: str
    data: bytes
    mode: int  # permission bits


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "is a symlink"
    return (exc.strerror or type(exc).__name__).lower()


class RootedHostFiles:
    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)

    def _dir_fd(self, directory: str) -> int:
        """An O_DIRECTORY descriptor of a host directory, no symlink followed below the root."""
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for part in [p for p in directory.split("/") if p]:
                if part == "..":
                    raise HostWriteError(directory, "path escapes the root")
                try:
                    child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                                    | os.O_CLOEXEC, dir_fd=fd)
                except OSError as exc:
                    if exc.errno == errno.ENOTDIR:
                        raise HostWriteError(directory, "a component is not a directory "
                                             "(or is a symlink)") from None
                    raise HostWriteError(directory, _reason(exc)) from None
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def list_names(self, directory: str, suffix: str = "") -> list[str]:
        """Sorted names of the regular files and symlinks in the directory ([] if missing)."""
        try:
            fd = self._dir_fd(directory)
        except HostWriteError as exc:
            if exc.reason == "no such file or directory":
                return []
            raise
        try:
            return sorted(n for n in os.listdir(fd) if n.endswith(suffix)
                          and not n.startswith(TEMP_PREFIX))
        finally:
            os.close(fd)

    def read(self, directory: str, name: str, max_bytes: int) -> HostFile:
        fd = self._dir_fd(directory)
        path = f"{directory}/{name}"
        try:
            try:
                file_fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                                  | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                raise HostWriteError(path, _reason(exc)) from None
            try:
                st = os.fstat(file_fd)
                if not stat.S_ISREG(st.st_mode):
                    raise HostWriteError(path, "is not a regular file")
                chunks: list[bytes] = []
                total = 0
                while chunk := os.read(file_fd, 65536):
                    chunks.append(chunk)
                    total += len(chunk)
                    if total > max_bytes:
                        raise HostWriteError(path, f"larger than {max_bytes} bytes")
                return HostFile(name, b"".join(chunks), stat.S_IMODE(st.st_mode))
            finally:
                os.close(file_fd)
        finally:
            os.close(fd)

    def write(self, directory: str, name: str, data: bytes, mode: int) -> None:
        """Replace (or create) `directory/name` atomically with `data` and `mode`."""
        fd = self._dir_fd(directory)
        path = f"{directory}/{name}"
        temp = f"{TEMP_PREFIX}{os.urandom(6).hex()}"
        try:
            try:
                out = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                              | os.O_CLOEXEC, 0o600, dir_fd=fd)
                try:
                    os.fchmod(out, mode)
                    view = memoryview(data)
                    while view:
                        view = view[os.write(out, view):]
                    os.fsync(out)
                finally:
                    os.close(out)
                os.rename(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
                os.fsync(fd)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=fd)
                raise HostWriteError(path, _reason(exc)) from None
        finally:
            os.close(fd)

    def remove(self, directory: str, names: list[str]) -> None:
        """Remove these entries (a missing one is fine), then fsync the directory."""
        fd = self._dir_fd(directory)
        try:
            for name in names:
                try:
                    os.unlink(name, dir_fd=fd)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    raise HostWriteError(f"{directory}/{name}", _reason(exc)) from None
            os.fsync(fd)
        finally:
            os.close(fd)

    def sweep_temp_files(self, directory: str) -> None:
        """Remove temporary files a crash left behind (netplan would read a `.yaml` one)."""
        try:
            fd = self._dir_fd(directory)
        except HostWriteError:
            return
        try:
            for name in os.listdir(fd):
                if name.startswith(TEMP_PREFIX):
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=fd)
        finally:
            os.close(fd)
