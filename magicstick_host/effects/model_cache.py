"""Delete one allowed entry of a model-cache root, symlink-safe (model-cache.md, step 3).

The operation deletes entry by entry and re-checks the blockers and the mounts before each
call; this effect deletes exactly the one entry it is given and decides nothing: which entries
may go is the domain's allow-list (domain/model_cache/inventory.py), checked again when a
planned entry is loaded from the state (domain/model_cache/cleanup.py). Its guards are
refusals, not decisions: it never deletes
- anything but one directory entry of the root (a name with `/`, `.` or `..` is refused);
- anything when the root is not the directory the request was approved against (identity);
- anything through a symlink: every directory is opened with O_NOFOLLOW relative to its
  parent's descriptor, from the host root `/` down; a symlink inside is unlinked, never
  followed;
- anything on another mount or filesystem: a directory whose mount ID or st_dev is not the
  root's is not entered, and the deletion stops there with what is left kept.
The result says what was freed: allocated bytes of the inodes whose last link went.
"""

from __future__ import annotations

import errno
import os
import stat

from magicstick_host.lite_dataclasses import dataclass
from magicstick_host.ports.hosttree import (
    DIR_FLAGS,
    MAX_DEPTH,
    MISSING,
    RootedHostTree,
    TreeError,
    mount_id_of,
    reason_of,
)


@dataclass(frozen=True)
class DeleteOutcome:
    ok: bool
    detail: str
    freed_bytes: int = 0


class _Stop(Exception):
    """Stop deleting: what is left stays. The message says why."""


class _Deletion:
    def __init__(self, root_fd: int, shown_root: str) -> None:
        st = os.fstat(root_fd)
        self.dev = st.st_dev
        self.mount = mount_id_of(root_fd)
        self.shown_root = shown_root
        self.freed = 0
        self.links: dict[tuple[int, int], int] = {}

    def unlinked(self, st: os.stat_result) -> None:
        """Count the bytes of an inode once its last link is gone."""
        if st.st_nlink <= 1:
            self.freed += st.st_blocks * 512
            return
        key = (st.st_dev, st.st_ino)
        self.links[key] = self.links.get(key, 0) + 1
        if self.links[key] >= st.st_nlink:
            self.freed += st.st_blocks * 512

    def unlink(self, parent: int, name: str, st: os.stat_result) -> None:
        """A file, symlink, socket or FIFO: unlinkat never follows a symlink."""
        try:
            os.unlink(name, dir_fd=parent)
        except FileNotFoundError:
            return
        self.unlinked(st)

    def remove(self, parent: int, name: str, shown: str, depth: int) -> None:
        """Remove `name` in the directory `parent`, whatever it is, without following it."""
        try:
            st = os.lstat(name, dir_fd=parent)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(st.st_mode):
            self.unlink(parent, name, st)
            return
        if depth > MAX_DEPTH:
            raise _Stop(f"{shown} is nested too deeply")
        if st.st_dev != self.dev:
            raise _Stop(f"{shown} is on another filesystem")
        try:
            fd = os.open(name, DIR_FLAGS, dir_fd=parent)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # replaced since the lstat
                try:
                    again = os.lstat(name, dir_fd=parent)
                except FileNotFoundError:
                    return
                if stat.S_ISDIR(again.st_mode):
                    raise _Stop(f"{shown} keeps changing while it is deleted") from None
                self.unlink(parent, name, again)
                return
            raise _Stop(f"{shown} cannot be opened ({reason_of(exc)})") from None
        try:
            opened = os.fstat(fd)
            if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
                raise _Stop(f"{shown} changed while it was deleted")
            if mount_id_of(fd) != self.mount:
                raise _Stop(f"{shown} is a separate mount")
            with os.scandir(fd) as entries:
                names = sorted(e.name for e in entries)
            for child in names:
                self.remove(fd, child, f"{shown}/{child}", depth + 1)
        finally:
            os.close(fd)
        try:
            os.rmdir(name, dir_fd=parent)
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise _Stop(f"new files appeared in {shown} while it was deleted") from None
            raise _Stop(f"{shown} cannot be removed ({reason_of(exc)})") from None
        self.freed += st.st_blocks * 512


def delete_cache_entry(
    host_root: str, root_path: str, entry: str, root_identity: tuple[int, int]
) -> DeleteOutcome:
    """Delete the entry `entry` of the cache root at host path `root_path`, if the root is
    still the directory `root_identity` (st_dev, st_ino). An entry or root that is already
    gone is ok, freeing 0."""
    if not entry or "/" in entry or entry in (".", "..") or "\0" in entry:
        return DeleteOutcome(False, f"refused: {entry!r} is not one entry of {root_path}")
    spec_path = root_path.rstrip("/")
    shown = f"{spec_path}/{entry}"
    tree = RootedHostTree(host_root)
    try:
        root_fd = tree.open_dir(spec_path)
    except TreeError as exc:
        if exc.reason == MISSING:
            return DeleteOutcome(True, f"{spec_path} is gone; nothing to delete")
        return DeleteOutcome(False, f"refused: {exc.path}: {exc.reason}; nothing was deleted")
    try:
        st = os.fstat(root_fd)
        if (st.st_dev, st.st_ino) != tuple(root_identity):
            return DeleteOutcome(
                False, f"refused: {spec_path} is not the directory that was reviewed; "
                "nothing was deleted"
            )
        try:
            deletion = _Deletion(root_fd, spec_path)
        except TreeError as exc:
            return DeleteOutcome(False, f"refused: {spec_path}: {exc.reason}; nothing was deleted")
        try:
            deletion.remove(root_fd, entry, shown, 1)
        except (_Stop, TreeError) as exc:
            why = exc.reason if isinstance(exc, TreeError) else str(exc)
            return DeleteOutcome(
                False, f"stopped deleting {shown}: {why}; the rest was kept", deletion.freed
            )
        except OSError as exc:
            return DeleteOutcome(
                False, f"stopped deleting {shown}: {reason_of(exc)}; the rest was kept",
                deletion.freed,
            )
        return DeleteOutcome(True, f"deleted {shown}", deletion.freed)
    finally:
        os.close(root_fd)
