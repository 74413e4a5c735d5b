"""The model-cache inventory, cached (model-cache.md, "What users will measure").

A cache of 100,000 files must not make the idle tick expensive, so the last full walk is kept in
the state directory (ports/model_cache_store.py) and two questions have two answers:
- `for_report`: an inventory fresh enough for the report. The last walk is reused while a cheap
  change check (every directory's identity and mtime, each root's path components) sees no
  change and it is younger than `model_cache_rewalk_s`; a change of content found sooner than
  `model_cache_min_walk_interval_s` after the last walk waits for that interval. A root (or a
  component of its path) that is not the directory the walk saw is looked for on every call,
  interval or not: the report's id names the roots' identities, and it must never name
  directories that are no longer there (a request made from it would only be refused).
- `walk_now`: a full walk, always (intake, and before deletion).
On every call, whatever the cache says, the mount table is read afresh (a nested mount makes
the inventory untrusted at once) and the free space of `/` is measured afresh.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from magicstick_host.collect.model_cache_walk import (
    DirMark,
    WalkResult,
    filesystem_of_root,
    read_mount_problem,
    walk_model_caches,
)
from magicstick_host.domain.limits import Limits
from magicstick_host.domain.model_cache.inventory import (
    CACHE_ROOTS,
    CACHE_ROOTS_BY_ID,
    HUGGINGFACE,
    SHARED_BLOBS,
    CacheEntry,
    CacheInventory,
    RootInventory,
    SharedBlob,
    clearable_entry,
)
from magicstick_host.lite_dataclasses import replace
from magicstick_host.ports.clock import Instant
from magicstick_host.ports.hostfs import HostFS
from magicstick_host.ports.hosttree import HostTree, TreeError
from magicstick_host.ports.model_cache_store import ModelCacheStore

if TYPE_CHECKING:
    from typing import Any

# 2: the Xet root and the hub's shared-store blobs (a version-1 file is walked again)
SCHEMA_VERSION = 2


def inventory_to_json(inventory: CacheInventory) -> dict[str, Any]:
    return {
        "problem": inventory.problem,
        "inodes": inventory.inodes,
        "roots": [
            {
                "id": root.id,
                "identity": list(root.identity) if root.identity is not None else None,
                "usedBytes": root.used_bytes,
                "entries": [{"name": e.name, "bytes": e.bytes} for e in root.entries],
                "sharedBlobs": [{"name": b.name, "bytes": b.bytes} for b in root.shared_blobs],
            }
            for root in inventory.roots
        ],
    }


def inventory_from_json(doc: dict[str, Any]) -> CacheInventory:
    """From a schema-checked document. Which entries are clearable is decided again here,
    never taken from the file."""
    roots = []
    for root in doc["roots"]:
        spec = CACHE_ROOTS_BY_ID[root["id"]]
        identity = root["identity"]
        roots.append(
            RootInventory(
                id=spec.id,
                identity=(identity[0], identity[1]) if identity is not None else None,
                used_bytes=root["usedBytes"],
                entries=tuple(
                    CacheEntry(e["name"], e["bytes"], spec.clearable(e["name"]))
                    for e in root["entries"]
                ),
                shared_blobs=tuple(
                    SharedBlob(b["name"], b["bytes"]) for b in root["sharedBlobs"]
                    if spec.id == HUGGINGFACE.id and clearable_entry(SHARED_BLOBS, b["name"])
                ),
            )
        )
    if [r.id for r in roots] != [spec.id for spec in CACHE_ROOTS]:
        raise ValueError("the cached inventory does not list every root in order")
    return CacheInventory(roots=tuple(roots), problem=doc["problem"], inodes=doc["inodes"])


def roots_replaced(tree: HostTree, dirs: dict[str, DirMark]) -> bool:
    """Whether a root, or a component of its path, recorded by the walk is another inode now,
    or appeared or went away. Mtimes are not compared: content changes wait for the interval."""
    for spec in CACHE_ROOTS:
        prefix = ""
        for part in spec.path.strip("/").split("/"):
            prefix += "/" + part
            if prefix not in dirs:  # the walk stopped before it (an absent component)
                break
            mark = dirs[prefix]
            try:
                st = tree.lstat(prefix)
            except TreeError:
                return True
            if (None if st is None else (st.dev, st.ino)) != (
                None if mark is None else (mark[0], mark[1])
            ):
                return True
    return False


def changed(tree: HostTree, dirs: dict[str, DirMark]) -> bool:
    """Whether any recorded directory (or root path component) looks different now."""
    for path, mark in dirs.items():
        try:
            st = tree.lstat(path)
        except TreeError:
            return True
        now = None if st is None else (st.dev, st.ino, st.mtime_ns)
        if now != mark:
            return True
    return False


class ModelCacheInventory:
    """The tick's one way to the model-cache inventory. `store` None: no caching."""

    def __init__(
        self,
        tree: HostTree,
        fs: HostFS,
        store: ModelCacheStore | None,
        *,
        limits: Limits,
        monotonic: Callable[[], float],
    ) -> None:
        self.tree = tree
        self.fs = fs
        self.store = store
        self.limits = limits
        self.monotonic = monotonic
        # what the last call did: "walked" | "cached" | "mounts" (for tests and the bench)
        self.last_source = ""

    def for_report(self, now: Instant, boot_id: str) -> CacheInventory:
        problem = read_mount_problem(self.fs)
        if problem:
            return self._untrusted(problem)
        cached = self._cached(now, boot_id)
        if cached is None:
            return self._walk(now, boot_id)
        self.last_source = "cached"
        total, free = filesystem_of_root(self.tree)
        return replace(cached, total_bytes=total, free_bytes=free)

    def walk_now(self, now: Instant, boot_id: str) -> CacheInventory:
        problem = read_mount_problem(self.fs)
        if problem:
            return self._untrusted(problem)
        return self._walk(now, boot_id)

    def _untrusted(self, problem: str) -> CacheInventory:
        self.last_source = "mounts"
        total, free = filesystem_of_root(self.tree)
        roots = tuple(RootInventory(spec.id, None) for spec in CACHE_ROOTS)
        return CacheInventory(roots, total, free, problem=problem)

    def _walk(self, now: Instant, boot_id: str) -> CacheInventory:
        result: WalkResult = walk_model_caches(
            self.tree,
            max_inodes=self.limits.model_cache_max_inodes,
            time_s=self.limits.model_cache_walk_time_s,
            monotonic=self.monotonic,
        )
        self.last_source = "walked"
        if self.store is not None and boot_id:
            self.store.save(
                {
                    "schemaVersion": SCHEMA_VERSION,
                    "bootId": boot_id,
                    "walkedBoottime": max(now.boottime, 0.0),
                    "dirs": {p: list(m) if m is not None else None
                             for p, m in result.dirs.items()},
                    "inventory": inventory_to_json(result.inventory),
                }
            )
        return result.inventory

    def _cached(self, now: Instant, boot_id: str) -> CacheInventory | None:
        """The last walk, if it may stand in for a new one now."""
        doc = self.store.load() if self.store is not None else None
        if doc is None or not boot_id or doc["bootId"] != boot_id:
            return None
        age = now.boottime - float(doc["walkedBoottime"])
        if age < 0 or age >= self.limits.model_cache_rewalk_s:
            return None
        dirs: dict[str, DirMark] = {
            p: (m[0], m[1], m[2]) if m is not None else None for p, m in doc["dirs"].items()
        }
        if age >= self.limits.model_cache_min_walk_interval_s:
            if changed(self.tree, dirs):
                return None
        elif roots_replaced(self.tree, dirs):
            return None
        try:
            return inventory_from_json(doc["inventory"])
        except (KeyError, ValueError):
            return None
