"""Directory trees under the host root, read without ever following a symlink.

The host filesystem port (hostfs.py) reads single files and resolves symlinks *inside* the root,
which is right for sysfs. A tree the worker may later delete (the model caches) must not be
read that way: here every directory is opened with O_NOFOLLOW relative to its parent's
descriptor, from the host root `/` down, so a symlink anywhere on the way is refused
("symlink"), never resolved, and a rename race cannot redirect the walk elsewhere.

What this port tells, and nothing more:
- `probe(path)`: the directory at a host path (its identity), None when it is absent;
- `walk(path)`: every entry below it, depth first, each with its lstat facts, each directory
  with the mount it is on; symlinks are reported, never entered; for the entries the caller
  asks about (`read`), a symlink's target (readlinkat) or a small regular file's bytes (opened
  O_NOFOLLOW relative to its directory's descriptor, bounded);
- `statvfs(path)`: size and free space of the filesystem holding a host path;
- `lstat(path)`: one path's own facts, for a cheap "did anything change" check;
- `resolve(path)`: where a path leads through its symlinks, for judging someone else's path
  (a Pod's hostPath), never for opening anything.
Every failure is one `TreeError(path, reason)`; "missing" is the only reason callers may read
as "absent".
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from collections.abc import Callable, Iterator
from typing import Protocol

from magicstick_host.lite_dataclasses import dataclass
from magicstick_host.ports.hostfs import MAX_SYMLINK_HOPS, HostReadError

MISSING = "missing"
SYMLINK = "symlink"
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# deeper than any real cache (Hugging Face: models--x/snapshots/<rev>/<dirs...>/file)
MAX_DEPTH = 64


class TreeError(HostReadError):
    """A tree could not be read safely. `reason` is short and stable: "missing", "symlink",
    "not a directory", "permission denied", "too deep", "mount unknown", ..."""


@dataclass(frozen=True)
class NodeStat:
    """An inode as lstat sees it: never the target of a symlink."""

    mode: int
    dev: int
    ino: int
    nlink: int
    blocks: int  # in 512-byte units, as st_blocks
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> NodeStat:
        return cls(st.st_mode, st.st_dev, st.st_ino, st.st_nlink, st.st_blocks, st.st_mtime_ns)

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)

    @property
    def is_symlink(self) -> bool:
        return stat.S_ISLNK(self.mode)

    @property
    def allocated_bytes(self) -> int:
        return self.blocks * 512

    @property
    def identity(self) -> tuple[int, int]:
        return (self.dev, self.ino)


@dataclass(frozen=True)
class WalkEntry:
    parts: tuple[str, ...]  # the path below the walked directory, e.g. ("blobs", "sha256-1")
    stat: NodeStat
    # for a directory: the mount ID of the descriptor that was opened (the kernel's mnt_id)
    mount_id: int | None = None
    # asked for by `read`: a symlink's target, or a regular file's bytes (None when it was
    # larger than asked, or changed or could not be read: the caller treats it as unreadable)
    link: str | None = None
    data: bytes | None = None


# walk(read=...): for an entry (its parts and lstat facts), how many bytes of a regular file
# to read, or whether to read a symlink's target (any positive number); 0: nothing
ReadWish = Callable[[tuple[str, ...], "NodeStat"], int]


def split_host_path(path: str) -> list[str]:
    """The components of an absolute host path; "." and ".." are refused, not interpreted."""
    if not path.startswith("/"):
        raise TreeError(path, "not an absolute path")
    parts = [p for p in path.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise TreeError(path, "not a normalised path")
    return parts


def reason_of(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return MISSING
    if exc.errno == errno.ELOOP:
        return SYMLINK
    if exc.errno == errno.ENOTDIR:
        return "not a directory"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return (exc.strerror or type(exc).__name__).lower()


def mount_id_of(fd: int) -> int:
    """The mount a descriptor is on (/proc/self/fdinfo, the worker's own process: this is
    about the descriptor, so it holds for any host root). Unlike st_dev it also tells a bind
    mount of the same filesystem apart."""
    try:
        with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as info:
            for line in info:
                if line.startswith("mnt_id:"):
                    return int(line.split(":", 1)[1])
    except (OSError, ValueError):
        pass
    raise TreeError(f"/proc/self/fdinfo/{fd}", "mount unknown")


class HostTree(Protocol):
    def probe(self, path: str) -> NodeStat | None:
        """The directory at `path` (lstat facts), None when it or a component is absent.
        TreeError when a component is a symlink, not a directory, or unreadable."""
        ...

    def mount_id(self, path: str) -> int:
        """The mount the directory at `path` is on. TreeError as `probe`, or "mount unknown"."""
        ...

    def walk(
        self, path: str, *, max_depth: int = MAX_DEPTH, read: ReadWish | None = None
    ) -> Iterator[WalkEntry]:
        """Every entry below the directory at `path`, parents before children, names sorted.
        Symlinks are reported, never entered. TreeError as `probe`, or for an unreadable
        directory or one deeper than `max_depth`. `read`: which symlinks' targets and which
        regular files' bytes (at most how many) to report with the entry."""
        ...

    def statvfs(self, path: str) -> tuple[int, int]:
        """(total bytes, bytes available) of the filesystem holding the directory `path`."""
        ...

    def lstat(self, path: str) -> NodeStat | None:
        """The path's own facts (a final symlink is not followed), None when absent. Cheap
        and not race-free: only for comparing with identities recorded by a walk."""
        ...

    def resolve(self, path: str) -> str:
        """Where a host path leads once its symlinks are followed (inside the host root), as
        a normalised absolute host path; the part that does not exist is kept as written.
        For judging a path someone else will follow (a Pod's hostPath), never for opening."""
        ...


class RootedHostTree:
    def __init__(self, root: str) -> None:
        self._root = os.path.realpath(root)

    @property
    def root(self) -> str:
        return self._root

    def open_dir(self, path: str) -> int:
        """A descriptor of the directory at host `path`, every component opened with
        O_NOFOLLOW relative to its parent. The caller closes it."""
        parts = split_host_path(path)
        try:
            fd = os.open(self._root, DIR_FLAGS)
        except OSError as exc:
            raise TreeError("/", reason_of(exc)) from None
        done = ""
        try:
            for part in parts:
                done += "/" + part
                try:
                    child = os.open(part, DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    raise TreeError(done, self._why(fd, part, exc)) from None
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    @staticmethod
    def _why(parent: int, name: str, exc: OSError) -> str:
        """O_NOFOLLOW|O_DIRECTORY on a symlink fails with ELOOP or ENOTDIR: tell which."""
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            try:
                st = os.lstat(name, dir_fd=parent)
            except OSError as again:
                return reason_of(again)
            return SYMLINK if stat.S_ISLNK(st.st_mode) else "not a directory"
        return reason_of(exc)

    def probe(self, path: str) -> NodeStat | None:
        try:
            fd = self.open_dir(path)
        except TreeError as exc:
            if exc.reason == MISSING:
                return None
            raise
        try:
            return NodeStat.of(os.fstat(fd))
        finally:
            os.close(fd)

    def mount_id(self, path: str) -> int:
        fd = self.open_dir(path)
        try:
            return mount_id_of(fd)
        finally:
            os.close(fd)

    def walk(
        self, path: str, *, max_depth: int = MAX_DEPTH, read: ReadWish | None = None
    ) -> Iterator[WalkEntry]:
        top = self.open_dir(path)
        # (descriptor, its parts, sorted names still to visit), deepest last
        stack: list[tuple[int, tuple[str, ...], list[str]]] = []
        try:
            stack.append((top, (), self._names(top, path)))
            while stack:
                fd, parts, names = stack[-1]
                if not names:
                    os.close(fd)
                    stack.pop()
                    continue
                name = names.pop()
                where = (*parts, name)
                shown = path.rstrip("/") + "/" + "/".join(where)
                try:
                    st = NodeStat.of(os.lstat(name, dir_fd=fd))
                except FileNotFoundError:
                    continue  # removed since the listing: not there any more
                except OSError as exc:
                    raise TreeError(shown, reason_of(exc)) from None
                if not st.is_dir:
                    wish = read(where, st) if read is not None else 0
                    if wish > 0 and st.is_symlink:
                        yield WalkEntry(where, st, link=_readlink(fd, name))
                    elif wish > 0 and stat.S_ISREG(st.mode):
                        yield WalkEntry(where, st, data=_read_small(fd, name, st, wish))
                    else:
                        yield WalkEntry(where, st)
                    continue
                if len(where) > max_depth:
                    raise TreeError(shown, "too deep")
                try:
                    child = os.open(name, DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno == errno.ENOENT:
                        continue
                    raise TreeError(shown, self._why(fd, name, exc)) from None
                try:
                    opened = NodeStat.of(os.fstat(child))
                    if opened.identity != st.identity:  # swapped between lstat and open
                        raise TreeError(shown, "changed while it was read")
                    mount = mount_id_of(child)
                    names_below = self._names(child, shown)
                except BaseException:
                    os.close(child)
                    raise
                stack.append((child, where, names_below))
                yield WalkEntry(where, opened, mount)
        finally:
            for fd, _, _ in stack:
                os.close(fd)

    @staticmethod
    def _names(fd: int, shown: str) -> list[str]:
        """The entry names of an open directory, sorted in reverse (popped from the end)."""
        try:
            with os.scandir(fd) as entries:
                return sorted((e.name for e in entries), reverse=True)
        except OSError as exc:
            raise TreeError(shown, reason_of(exc)) from None

    def statvfs(self, path: str) -> tuple[int, int]:
        fd = self.open_dir(path)
        try:
            vfs = os.statvfs(fd)
        except OSError as exc:
            raise TreeError(path, reason_of(exc)) from None
        finally:
            os.close(fd)
        return vfs.f_blocks * vfs.f_frsize, vfs.f_bavail * vfs.f_frsize

    def lstat(self, path: str) -> NodeStat | None:
        real = os.path.join(self._root, *split_host_path(path))
        try:
            return NodeStat.of(os.lstat(real))
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            return None
        except OSError as exc:
            raise TreeError(path, reason_of(exc)) from None

    def resolve(self, path: str) -> str:
        pending = [p for p in reversed(path.split("/")) if p not in ("", ".")]
        done: list[str] = []
        hops = 0
        while pending:
            part = pending.pop()
            if part == "..":
                if done:
                    done.pop()
                continue
            real = os.path.join(self._root, *done, part)
            try:
                st = os.lstat(real)
            except OSError:  # absent (or unreadable): the rest is taken as written
                done.append(part)
                done.extend(p for p in reversed(pending) if p != ".")
                return _normal("/" + "/".join(done))
            if not stat.S_ISLNK(st.st_mode):
                done.append(part)
                continue
            hops += 1
            if hops > MAX_SYMLINK_HOPS:
                raise TreeError(path, "symlink loop")
            try:
                target = os.readlink(real)
            except OSError as exc:
                raise TreeError(path, reason_of(exc)) from None
            if target.startswith("/"):
                done = []
            pending.extend(p for p in reversed(target.split("/")) if p not in ("", "."))
        return "/" + "/".join(done)


def _readlink(parent: int, name: str) -> str | None:
    try:
        return os.readlink(name, dir_fd=parent)
    except OSError:
        return None


def _read_small(parent: int, name: str, st: NodeStat, limit: int) -> bytes | None:
    """At most `limit` bytes of the regular file `name`, if it is still the inode `st`; None
    when it is larger, another file by now, or unreadable. O_NONBLOCK: a FIFO swapped in
    cannot hang the walk."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=parent)
    except OSError:
        return None
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != st.identity or not stat.S_ISREG(opened.st_mode):
            return None
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(65536, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return None if total > limit else b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _normal(path: str) -> str:
    return posixpath.normpath("/" + path.lstrip("/"))
