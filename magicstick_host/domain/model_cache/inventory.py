"""The model caches as evidence: which roots, what may be deleted, what a walk found.

model-cache.md, "Scope": two fixed caches, nothing else. Hugging Face's has two roots: the hub
(its `models--*` entries, and the shared-store blobs only they use: domain/model_cache/shared.py)
and Xet's chunk cache beside it (every entry); Ollama's has one. Only the entries named here are
ever deleted; credentials (`token`, `stored_tokens`), `datasets--*` and anything else next to
them stay. The request carries no path: every path the cleanup touches comes from here.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from magicstick_host.domain.model_cache.shared import XET_HASH
from magicstick_host.domain.parsers.mountinfo import Mount
from magicstick_host.lite_dataclasses import dataclass

_HF_MODEL = re.compile(r"models--[A-Za-z0-9_.-]+")
OLLAMA_ENTRIES = ("blobs", "manifests")


@dataclass(frozen=True)
class CacheRootSpec:
    id: str
    name: str  # shown on the dashboard
    path: str  # the host path of the root, normalised
    cache: str = ""  # the report's cache this root belongs to ("": its own id)

    @property
    def cache_id(self) -> str:
        return self.cache or self.id

    def clearable(self, entry: str) -> bool:
        """Whether the top-level entry `entry` of this root is one the cleanup deletes."""
        if self.id == "huggingface":
            return _HF_MODEL.fullmatch(entry) is not None
        if self.id == "huggingface-xet":  # Xet's chunk cache: fetched again on demand
            return entry not in ("", ".", "..")
        if self.id == "ollama":
            return entry in OLLAMA_ENTRIES
        return False


HF_NAME = "Hugging Face / vLLM"
HUGGINGFACE = CacheRootSpec("huggingface", HF_NAME, "/root/.cache/huggingface/hub")
HF_XET = CacheRootSpec("huggingface-xet", HF_NAME, "/root/.cache/huggingface/xet",
                       cache="huggingface")
OLLAMA = CacheRootSpec("ollama", "Ollama", "/root/.ollama/models")
CACHE_ROOTS = (HUGGINGFACE, HF_XET, OLLAMA)
CACHE_ROOTS_BY_ID = {spec.id: spec for spec in CACHE_ROOTS}
# the report's caches (`modelCache.caches`), in order: (id, name)
REPORT_CACHES = (("huggingface", HF_NAME), ("ollama", "Ollama"))
# a cleanup entry that is a payload of the hub's shared blob store, not a top-level entry:
# its `name` is the payload's 64-hex name (domain/model_cache/shared.py)
SHARED_BLOBS = "huggingface-shared"


def clearable_entry(cache_id: str, entry: str) -> bool:
    """The one allow-list, shared by the inventory and the deletion effect."""
    if cache_id == SHARED_BLOBS:
        return XET_HASH.fullmatch(entry) is not None
    spec = CACHE_ROOTS_BY_ID.get(cache_id)
    return spec is not None and "/" not in entry and spec.clearable(entry)


@dataclass(frozen=True)
class CacheEntry:
    """A top-level entry of a cache root."""

    name: str
    bytes: int  # allocated bytes below (and of) it, each inode counted once
    clearable: bool


@dataclass(frozen=True)
class SharedBlob:
    """A payload of the hub's shared store that the cleanup may delete (with its manifest)."""

    name: str  # 64 hex
    bytes: int  # allocated bytes of the payload and its manifest, each inode counted once


@dataclass(frozen=True)
class RootInventory:
    id: str
    # (st_dev, st_ino) of the root directory; None when it is absent (an empty cache)
    identity: tuple[int, int] | None
    used_bytes: int = 0
    entries: tuple[CacheEntry, ...] = ()
    # the hub only: the shared-store payloads only the deletable entries use
    shared_blobs: tuple[SharedBlob, ...] = ()

    @property
    def reclaimable_bytes(self) -> int:
        return (sum(e.bytes for e in self.entries if e.clearable)
                + sum(b.bytes for b in self.shared_blobs))

    @property
    def clearable_entries(self) -> tuple[CacheEntry, ...]:
        return tuple(e for e in self.entries if e.clearable)

    @property
    def clearable(self) -> bool:
        """Whether the cleanup would delete anything here."""
        return bool(self.clearable_entries or self.shared_blobs)


@dataclass(frozen=True)
class CacheInventory:
    """What one walk of both roots found. `problem` is why it cannot be trusted ("" if it
    can): then the sizes are incomplete and nothing may be offered or deleted."""

    roots: tuple[RootInventory, ...]
    total_bytes: int | None = None  # of the filesystem holding `/`
    free_bytes: int | None = None
    problem: str = ""
    inodes: int = 0

    @property
    def trusted(self) -> bool:
        return not self.problem

    def root(self, cache_id: str) -> RootInventory | None:
        return next((r for r in self.roots if r.id == cache_id), None)

    @property
    def reclaimable_bytes(self) -> int:
        return sum(r.reclaimable_bytes for r in self.roots)


def normalise_path(path: str) -> str:
    """An absolute path with `//`, `.` and `..` resolved lexically (`//root` is `/root`,
    `/a/../..` is `/`). POSIX keeps a leading `//` in normpath; the kernel does not."""
    return posixpath.normpath("/" + path.lstrip("/"))


def below(path: str, root: str) -> bool:
    """`path` is strictly inside `root` (both normalised)."""
    return path != root and (root == "/" or path.startswith(root + "/"))


def nested_mount(mounts: Iterable[Mount], specs: Iterable[CacheRootSpec] = CACHE_ROOTS) -> str:
    """Why the mount table rules out a cleanup, or "": a filesystem mounted strictly below a
    root would have its content deleted with the cache. A mount exactly at a root (the root
    is its own filesystem, or a bind mount of it such as systemd's ReadWritePaths=) is fine:
    the walk and the deletion stay on that one mount."""
    specs = tuple(specs)
    for mount in mounts:
        point = normalise_path(mount.mount_point)
        for spec in specs:
            if below(point, spec.path):
                return f"a separate filesystem is mounted at {point} inside the {spec.name} cache"
    return ""
