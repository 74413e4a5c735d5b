"""Delete payloads of Hugging Face's shared blob store, as the library's own `sweep_shared_blob`
does (model-cache.md, "Hugging Face's shared blob store"; domain/model_cache/shared.py).

The operation calls this once the `models--*` entries are gone, with the payloads its fresh walk
found reclaimable; this effect deletes what it is given and decides nothing, but it refuses:
- anything when the hub is not the directory that was reviewed (identity), or its store is not
  a marked store;
- anything through a symlink: the hub, `blobs` and each prefix directory are opened with
  O_NOFOLLOW relative to their parent's descriptor, from the host root `/` down (the tree
  port), and the payload, its manifest and its lock are opened or unlinked relative to them;
- anything on another filesystem or mount than the hub.
For each payload it takes the library's lock (an exclusive flock on `<64 hex>.lock`) without
waiting: held by someone else means a download is using it, so it is kept and counted. Under the
lock it reads the manifest again (bounded) and checks every reference's symlink again: one that
holds (a repository links to the payload again), or a manifest that is gone or garbled, keeps
the payload. Otherwise the payload and then its manifest are unlinked; the lock file, the prefix
directories, the store and its marker stay (the library's own sweep keeps them too).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat

from magicstick_host import hf_store_format as shared
from magicstick_host.effects.model_cache import DeleteOutcome
from magicstick_host.hf_store_format import sweep_detail
from magicstick_host.ports.hosttree import (
    DIR_FLAGS,
    MISSING,
    RootedHostTree,
    TreeError,
    mount_id_of,
    reason_of,
)

FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
LOCK_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class _Refused(Exception):
    """Stop: nothing more is deleted. The message says why."""


def _read_file(parent: int, name: str, limit: int) -> bytes | None:
    """At most `limit` bytes of the regular file `name`; None when absent, another kind of
    file, larger or unreadable."""
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=parent)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = b""
        while len(data) <= limit:
            chunk = os.read(fd, min(65536, limit + 1 - len(data)))
            if not chunk:
                break
            data += chunk
        return None if len(data) > limit else data
    except OSError:
        return None
    finally:
        os.close(fd)


class _Sweep:
    def __init__(self, hub_fd: int, hub: str) -> None:
        self.hub_fd = hub_fd
        self.hub = hub
        st = os.fstat(hub_fd)
        self.dev = st.st_dev
        self.mount = mount_id_of(hub_fd)
        self.deleted = 0
        self.freed = 0
        self.locked = [0, 0]
        self.in_use = [0, 0]

    def open_dir(self, parent: int, name: str, shown: str) -> int:
        try:
            fd = os.open(name, DIR_FLAGS, dir_fd=parent)
        except OSError as exc:
            raise _Refused(f"{shown}: {reason_of(exc)}") from None
        st = os.fstat(fd)
        if st.st_dev != self.dev or mount_id_of(fd) != self.mount:
            os.close(fd)
            raise _Refused(f"{shown} is on another filesystem or mount than {self.hub}")
        return fd

    def holds(self, reference: tuple[str, ...], name: str) -> bool:
        """Whether `hub/<repo>/blobs/<file>` is (still) a symlink leading to the payload.
        Anything that cannot be told counts as holding: the payload is kept."""
        repo, _, file = reference
        try:
            repo_fd = os.open(repo, DIR_FLAGS, dir_fd=self.hub_fd)
        except OSError as exc:
            return exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)
        try:
            blobs_fd = os.open("blobs", DIR_FLAGS, dir_fd=repo_fd)
        except OSError as exc:
            os.close(repo_fd)
            return exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)
        try:
            try:
                target = os.readlink(file, dir_fd=blobs_fd)
            except OSError as exc:  # gone, or not a symlink (EINVAL): it holds nothing
                return exc.errno not in (errno.ENOENT, errno.EINVAL, errno.ENOTDIR)
            return shared.link_target(self.hub, reference, target) == name
        finally:
            os.close(blobs_fd)
            os.close(repo_fd)

    def one(self, store_fd: int, name: str) -> None:
        prefix = name[:2]
        try:
            os.lstat(prefix, dir_fd=store_fd)
        except FileNotFoundError:
            return  # its prefix directory is gone, so is the payload
        prefix_fd = self.open_dir(store_fd, prefix, f"{self.hub}/blobs/{prefix}")
        try:
            self._under_lock(prefix_fd, name)
        finally:
            os.close(prefix_fd)

    def _under_lock(self, prefix_fd: int, name: str) -> None:
        shown = shared.blob_path(self.hub, name)
        try:
            payload = os.lstat(name, dir_fd=prefix_fd)
        except FileNotFoundError:
            return  # already gone (another sweep): nothing to free
        if not stat.S_ISREG(payload.st_mode):
            return  # not a payload the library wrote: not ours to delete
        size = payload.st_blocks * 512 if payload.st_nlink <= 1 else 0
        try:
            lock = os.open(name + shared.LOCK_SUFFIX, LOCK_FLAGS, 0o666, dir_fd=prefix_fd)
        except OSError as exc:
            raise _Refused(f"the lock of {shown} cannot be opened ({reason_of(exc)})") from None
        try:
            if not stat.S_ISREG(os.fstat(lock).st_mode):
                raise _Refused(f"the lock of {shown} is not a regular file")
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self.locked[0] += 1
                self.locked[1] += size
                return
            manifest_name = name + shared.MANIFEST_SUFFIX
            references = shared.manifest_references(
                _read_file(prefix_fd, manifest_name, shared.MAX_MANIFEST_BYTES))
            if references is None or any(self.holds(r, name) for r in references):
                self.in_use[0] += 1
                self.in_use[1] += size
                return
            try:
                manifest = os.lstat(manifest_name, dir_fd=prefix_fd)
            except FileNotFoundError:
                manifest = None
            os.unlink(name, dir_fd=prefix_fd)
            self.freed += size
            self.deleted += 1
            if manifest is not None:
                try:
                    os.unlink(manifest_name, dir_fd=prefix_fd)
                    self.freed += manifest.st_blocks * 512
                except FileNotFoundError:
                    pass
        finally:
            os.close(lock)  # releases the flock

    def detail(self) -> str:
        return sweep_detail(self.deleted, self.freed, (self.locked[0], self.locked[1]),
                            (self.in_use[0], self.in_use[1]))


def sweep_shared_blobs(
    host_root: str, hub: str, root_identity: tuple[int, int], names: list[str]
) -> DeleteOutcome:
    """Delete the payloads `names` (64 hex each) of the shared store of the hub at host path
    `hub`, if the hub is still the directory `root_identity`. A hub or store already gone is
    ok, freeing 0."""
    bad = [n for n in names if shared.XET_HASH.fullmatch(n) is None]
    if bad:
        return DeleteOutcome(False, f"refused: {bad[0][:80]!r} is not a shared blob name")
    tree = RootedHostTree(host_root)
    try:
        hub_fd = tree.open_dir(hub)
    except TreeError as exc:
        if exc.reason == MISSING:
            return DeleteOutcome(True, f"{hub} is gone; nothing to delete")
        return DeleteOutcome(False, f"refused: {exc.path}: {exc.reason}; nothing was deleted")
    try:
        st = os.fstat(hub_fd)
        if (st.st_dev, st.st_ino) != tuple(root_identity):
            return DeleteOutcome(False, f"refused: {hub} is not the directory that was "
                                 "reviewed; nothing was deleted")
        try:
            run = _Sweep(hub_fd, hub)
            store_fd = run.open_dir(hub_fd, shared.STORE_DIR, f"{hub}/{shared.STORE_DIR}")
        except (TreeError, _Refused) as exc:
            why = exc.reason if isinstance(exc, TreeError) else str(exc)
            return DeleteOutcome(False, f"refused: {why}; nothing was deleted")
        try:
            if not shared.marker_valid(_read_file(store_fd, shared.MARKER,
                                                  shared.MAX_MARKER_BYTES)):
                return DeleteOutcome(False, f"refused: {hub}/{shared.STORE_DIR} is not a marked "
                                     "shared blob store; nothing was deleted")
            for name in names:
                run.one(store_fd, name)
        except (_Refused, TreeError, OSError) as exc:
            why = (exc.reason if isinstance(exc, TreeError)
                   else reason_of(exc) if isinstance(exc, OSError) else str(exc))
            return DeleteOutcome(False, f"stopped: {why}; the rest was kept ({run.detail()})",
                                 run.freed)
        finally:
            os.close(store_fd)
        return DeleteOutcome(True, run.detail(), run.freed)
    finally:
        os.close(hub_fd)
