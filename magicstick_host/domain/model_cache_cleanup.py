"""The clear-model-cache operation's decisions, as pure functions (model-cache.md, steps 2-4).

Preparing re-collects and re-checks, then fixes the list of entries to delete (`plan_entries`)
from that fresh walk. Each later step deletes one entry; before each, `next_step` looks at the
blockers and the mount table read just then:
- a blocker (or workloads that cannot be read, or a mount inside a root) stops the cleanup:
  Failed, with what was kept;
- a failed deletion stops it too: Failed, with the effect's reason;
- no entry left: Succeeded, with the space freed.
A deletion whose outcome was never recorded (the worker died during it) is never repeated:
`interrupted_message` says what is known and what is left.
"""

from __future__ import annotations

from magicstick_host.domain.model_cache import approx_gib
from magicstick_host.domain.model_cache_blockers import Blockers
from magicstick_host.domain.model_cache_inventory import (
    CACHE_ROOTS_BY_ID,
    CacheInventory,
    clearable_entry,
)
from magicstick_host.lite_dataclasses import dataclass
from magicstick_host.static import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

MODEL_STARTED = "A model started during cleanup. Remaining cache files were kept."
# Ollama's manifests go before its blobs: a cleanup stopped in between leaves unreferenced
# blobs (which Ollama prunes), never a manifest that names a deleted blob
OLLAMA_ORDER = ("manifests", "blobs")


@dataclass(frozen=True)
class CleanupEntry:
    cache: str  # huggingface | ollama
    name: str  # a top-level entry the allow-list names
    root_identity: tuple[int, int]  # (st_dev, st_ino) of the root when it was planned
    bytes: int  # as the walk counted it

    @property
    def path(self) -> str:
        return f"{CACHE_ROOTS_BY_ID[self.cache].path}/{self.name}"

    def to_json(self) -> dict[str, Any]:
        return {"cache": self.cache, "name": self.name,
                "rootIdentity": list(self.root_identity), "bytes": self.bytes}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> CleanupEntry:
        identity = doc["rootIdentity"]
        entry = cls(str(doc["cache"]), str(doc["name"]), (int(identity[0]), int(identity[1])),
                    int(doc["bytes"]))
        if not clearable_entry(entry.cache, entry.name):  # a tampered state deletes nothing
            raise ValueError(f"{entry.cache}/{entry.name} is not a deletable cache entry")
        return entry


def plan_entries(inventory: CacheInventory) -> tuple[CleanupEntry, ...]:
    """Every clearable entry of a trusted walk, in deletion order."""
    if not inventory.trusted:
        raise ValueError("an untrusted inventory plans no deletion")
    entries: list[CleanupEntry] = []
    for root in inventory.roots:
        if root.identity is None:
            continue
        found = list(root.clearable_entries)
        if root.id == "ollama":
            found.sort(key=lambda e: OLLAMA_ORDER.index(e.name))
        entries.extend(CleanupEntry(root.id, e.name, root.identity, e.bytes) for e in found)
    return tuple(entries)


@dataclass(frozen=True)
class DeleteNext:
    entry: CleanupEntry


@dataclass(frozen=True)
class Finish:
    phase: str  # Succeeded | Failed
    message: str


Step = DeleteNext | Finish


def kept_summary(remaining: tuple[CleanupEntry, ...], freed: int) -> str:
    left = sum(e.bytes for e in remaining)
    what = "entry" if len(remaining) == 1 else "entries"
    done = f" About {approx_gib(freed)} was freed before it stopped." if freed else ""
    return f"{len(remaining)} cache {what} (about {approx_gib(left)}) were kept.{done}"


def next_step(
    remaining: tuple[CleanupEntry, ...],
    *,
    blockers: Blockers,
    mount_problem: str,
    freed: int,
) -> Step:
    """What to do now, with the blockers and the mount table just read."""
    if not remaining:
        return Finish("Succeeded", succeeded_message(freed))
    if blockers.found:
        return Finish("Failed", (
            f"{MODEL_STARTED} Found: {blockers.summary()}. {kept_summary(remaining, freed)}"))
    if blockers.error:
        return Finish("Failed", (
            f"The cleanup stopped: {blockers.summary()}, so it cannot be told whether a model "
            f"started. Remaining cache files were kept. {kept_summary(remaining, freed)}"))
    if mount_problem:
        return Finish("Failed", (
            f"The cleanup stopped: {mount_problem}. Remaining cache files were kept. "
            f"{kept_summary(remaining, freed)}"))
    return DeleteNext(remaining[0])


def succeeded_message(freed: int) -> str:
    return f"The model caches were cleared: about {approx_gib(freed)} was freed."


def deletion_failed_message(
    entry: CleanupEntry, detail: str, remaining: tuple[CleanupEntry, ...], freed: int
) -> str:
    """A deletion that reported failure: it stopped part way, the rest (and the rest of the
    entry) kept. `remaining` still includes `entry`."""
    return (f"Deleting {entry.path} failed: {detail}. Remaining cache files were kept. "
            f"{kept_summary(remaining, freed)}")


def interrupted_message(
    entry: CleanupEntry, remaining: tuple[CleanupEntry, ...], freed: int
) -> str:
    """Found in progress after a crash: the deletion of `entry` may be partial, and is never
    resumed. `remaining` still includes `entry`."""
    return (f"The cleanup was interrupted while {entry.path} was being deleted; it is not "
            f"resumed. That entry may be partly deleted. {kept_summary(remaining, freed)} "
            "Review the Model cache page and clear again if needed.")
