"""One full walk of the model-cache roots (model-cache.md, "The capability").

Through the tree port only (ports/hosttree.py: nothing is followed). The walk counts allocated
space (st_blocks x 512), each inode once however many hard links it has, and gives up, with
the reason in `CacheInventory.problem`, when the inventory cannot be trusted:
- a root or a component of its path is a symlink (or not a directory, or unreadable);
- a filesystem is mounted below a root: a directory on another mount or another st_dev than
  its root (and the mount table, `read_mount_problem`, which the caller checks on every tick);
- more than `max_inodes` entries below the roots together, or more than `time_s` seconds.
A missing root is an empty cache, not a problem. Every directory seen is recorded with its
identity and mtime, so a later tick can tell cheaply whether anything changed.
In the hub, the walk also reads what judging the shared blob store needs
(domain/model_cache/shared.py): the marker, each payload's manifest (bounded) and the target of
each `<repo>/blobs/<file>` symlink, all through the same descriptors, never following a link.
"""

from __future__ import annotations

import stat
from collections.abc import Callable

from magicstick_host.domain.model_cache import shared
from magicstick_host.domain.model_cache.inventory import (
    CACHE_ROOTS,
    HUGGINGFACE,
    CacheEntry,
    CacheInventory,
    CacheRootSpec,
    RootInventory,
    SharedBlob,
    nested_mount,
)
from magicstick_host.domain.parsers import ParseError
from magicstick_host.domain.parsers.mountinfo import parse_mountinfo
from magicstick_host.lite_dataclasses import dataclass, field
from magicstick_host.ports.hostfs import HostFS, HostReadError
from magicstick_host.ports.hosttree import (
    MISSING,
    SYMLINK,
    HostTree,
    NodeStat,
    TreeError,
    WalkEntry,
)

MOUNTINFO = "/proc/self/mountinfo"
# the deadline is looked at every this many entries: the clock is not free either
CLOCK_EVERY = 256
# the manifests of one walk read at most this much together (64 MiB: about 400,000 references)
MAX_MANIFESTS_BYTES = 64 * 1024 * 1024
# (dev, ino, mtime_ns) of a directory; None: the path was absent
DirMark = tuple[int, int, int] | None


@dataclass
class WalkResult:
    inventory: CacheInventory
    # host path -> its mark: every directory the walk saw, and each root's path components
    dirs: dict[str, DirMark] = field(default_factory=dict)


class _Untrusted(Exception):
    """Stop the walk: the inventory cannot be trusted, for this reason."""


def read_mount_problem(fs: HostFS) -> str:
    """"" when the mount table shows no filesystem mounted inside a cache root."""
    try:
        mounts = parse_mountinfo(fs.read_text(MOUNTINFO, max_bytes=4 * 1024 * 1024))
    except HostReadError as exc:
        return f"the mount table {MOUNTINFO} cannot be read ({exc.reason})"
    except ParseError as exc:
        return f"the mount table {MOUNTINFO} cannot be parsed ({exc})"
    return nested_mount(mounts)


def filesystem_of_root(tree: HostTree) -> tuple[int | None, int | None]:
    """(total, available) bytes of the filesystem holding `/`; None when unreadable."""
    try:
        total, free = tree.statvfs("/")
    except TreeError:
        return None, None
    return total, free


def _mark(st: NodeStat) -> DirMark:
    return (st.dev, st.ino, st.mtime_ns)


def _component_marks(tree: HostTree, path: str, dirs: dict[str, DirMark]) -> None:
    """Record each component of a root's path (up to the first absent one), so that a
    component replaced by a symlink, or a root appearing, shows up as a change."""
    prefix = ""
    for part in path.strip("/").split("/"):
        prefix += "/" + part
        try:
            st = tree.lstat(prefix)
        except TreeError:
            st = None
        dirs[prefix] = None if st is None else _mark(st)
        if st is None or not st.is_dir:
            return


def _refusal(spec: CacheRootSpec, exc: TreeError) -> str:
    if exc.reason == SYMLINK:
        return (f"{exc.path} is a symbolic link; the {spec.name} cache must be a real "
                "directory on a path without symbolic links")
    return f"{exc.path} cannot be read safely ({exc.reason}; the {spec.name} cache)"


class _Walker:
    def __init__(
        self, tree: HostTree, max_inodes: int, time_s: float, monotonic: Callable[[], float]
    ) -> None:
        self.tree = tree
        self.max_inodes = max_inodes
        self.time_s = time_s
        self.monotonic = monotonic
        self.deadline = monotonic() + time_s
        self.inodes = 0
        self.seen: set[tuple[int, int]] = set()
        self.dirs: dict[str, DirMark] = {}

    def count(self, st: NodeStat) -> int:
        """The bytes to add for this inode: 0 for a hard link already counted."""
        if st.nlink > 1 and not st.is_dir:
            if st.identity in self.seen:
                return 0
            self.seen.add(st.identity)
        return st.allocated_bytes

    def root(self, spec: CacheRootSpec) -> RootInventory:
        _component_marks(self.tree, spec.path, self.dirs)
        try:
            top = self.tree.probe(spec.path)
            if top is None:
                return RootInventory(spec.id, None)
            top_mount = self.tree.mount_id(spec.path)
        except TreeError as exc:
            raise _Untrusted(_refusal(spec, exc)) from None
        self.dirs[spec.path] = _mark(top)
        used = self.count(top)
        sizes: dict[str, int] = {}
        store = _StoreSeen() if spec.id == HUGGINGFACE.id else None
        try:
            for entry in self.tree.walk(spec.path, read=store.wish if store else None):
                self.inodes += 1
                if self.inodes > self.max_inodes:
                    raise _Untrusted(
                        f"the model caches hold more than {self.max_inodes:,} files and "
                        "directories, too many to check"
                    )
                if self.inodes % CLOCK_EVERY == 0 and self.monotonic() > self.deadline:
                    raise _Untrusted(
                        f"checking the model caches took longer than {self.time_s:g} s"
                    )
                path = spec.path + "/" + "/".join(entry.parts)
                if entry.stat.dev != top.dev:
                    raise _Untrusted(f"{path} is on another filesystem than the {spec.name} cache")
                if entry.stat.is_dir:
                    if entry.mount_id != top_mount:
                        raise _Untrusted(f"{path} is a separate mount inside the {spec.name} cache")
                    self.dirs[path] = _mark(entry.stat)
                size = self.count(entry.stat)
                used += size
                sizes[entry.parts[0]] = sizes.get(entry.parts[0], 0) + size
                if store is not None:
                    store.saw(entry, size)
        except TreeError as exc:
            if exc.reason == MISSING:  # the root went away during the walk
                raise _Untrusted(f"{exc.path} disappeared while it was checked") from None
            raise _Untrusted(_refusal(spec, exc)) from None
        entries = tuple(
            CacheEntry(name, size, spec.clearable(name)) for name, size in sorted(sizes.items())
        )
        blobs: tuple[SharedBlob, ...] = ()
        if store is not None:
            found = shared.reclaimable_blobs(store.facts(), spec.clearable)
            blobs = tuple(SharedBlob(name, size) for name, size in sorted(found.items()))
        return RootInventory(spec.id, top.identity, used, entries, blobs)


class _StoreSeen:
    """What the hub's walk saw of its shared blob store, gathered entry by entry."""

    def __init__(self) -> None:
        # all manifests together: a store of many huge manifests must not fill the memory;
        # past it a manifest counts as unreadable (its payload is kept)
        self.manifest_budget = MAX_MANIFESTS_BYTES
        self.marker: bytes | None = None
        self.payloads: dict[str, int] = {}  # name -> counted bytes of the payload
        self.manifest_bytes: dict[str, int] = {}
        self.manifests: dict[str, bytes | None] = {}
        self.links: dict[tuple[str, ...], str | None] = {}

    def wish(self, parts: tuple[str, ...], st: NodeStat) -> int:
        """What to read: the marker, the manifests, and the repositories' blob symlinks."""
        if parts == (shared.STORE_DIR, shared.MARKER):
            return shared.MAX_MARKER_BYTES
        if (len(parts) == 3 and parts[0] == shared.STORE_DIR
                and parts[2].endswith(shared.MANIFEST_SUFFIX)):
            return min(shared.MAX_MANIFEST_BYTES, max(self.manifest_budget, 0))
        return 1 if st.is_symlink and shared.is_repo_blob(parts) else 0

    def saw(self, entry: WalkEntry, size: int) -> None:
        parts, st = entry.parts, entry.stat
        if parts == (shared.STORE_DIR, shared.MARKER) and not st.is_symlink:
            self.marker = entry.data
        elif len(parts) == 3 and parts[0] == shared.STORE_DIR and not st.is_dir:
            name = parts[2]
            if name.endswith(shared.MANIFEST_SUFFIX):
                name = name[: -len(shared.MANIFEST_SUFFIX)]
                if shared.is_store_name(parts[1], name) and not st.is_symlink:
                    self.manifest_budget -= len(entry.data or b"")
                    self.manifests[name] = entry.data
                    self.manifest_bytes[name] = size
            elif shared.is_store_name(parts[1], name) and stat.S_ISREG(st.mode):
                self.payloads[name] = size
        elif st.is_symlink and shared.is_repo_blob(parts):
            self.links[parts] = (
                None if entry.link is None
                else shared.link_target(HUGGINGFACE.path, parts, entry.link)
            )

    def facts(self) -> shared.StoreFacts:
        blobs = {name: size + self.manifest_bytes.get(name, 0)
                 for name, size in self.payloads.items()}
        return shared.StoreFacts(shared.marker_valid(self.marker), blobs, self.manifests,
                                 self.links)


def walk_model_caches(
    tree: HostTree,
    *,
    max_inodes: int,
    time_s: float,
    monotonic: Callable[[], float],
) -> WalkResult:
    """Walk both roots now. `monotonic` is the walk's clock (seconds), for its time limit.
    The mount table is not read here (`read_mount_problem`): it is checked on every tick."""
    total, free = filesystem_of_root(tree)
    walker = _Walker(tree, max_inodes, time_s, monotonic)
    problem = ""
    try:
        roots = [walker.root(spec) for spec in CACHE_ROOTS]
    except _Untrusted as exc:
        problem = str(exc)
        # incomplete: no sizes are shown from a walk that gave up
        roots = [RootInventory(spec.id, None) for spec in CACHE_ROOTS]
    inventory = CacheInventory(
        roots=tuple(roots),
        total_bytes=total,
        free_bytes=free,
        problem=problem,
        inodes=walker.inodes,
    )
    return WalkResult(inventory, walker.dirs)
