"""The clear-model-cache operation's decisions, as pure functions (model-cache.md, steps 2-4).

Preparing re-collects and re-checks, then fixes the list of entries to delete (`plan_entries`)
from that fresh walk: the hub's `models--*` entries, then the shared-store payloads only they
used (model-cache.md, "Hugging Face's shared blob store": once no repository links to them), then
Xet's chunk cache, then Ollama's. Each later step deletes one entry, or one batch of shared-store
payloads (`next_batch`); before each, `next_step` looks at the blockers and the mount table read
just then:
- a blocker (or workloads that cannot be read, or a mount inside a root) stops the cleanup:
  Failed, with what was kept;
- a failed deletion stops it too: Failed, with the effect's reason;
- no entry left: Succeeded, with the space freed.
A deletion whose outcome was never recorded (the worker died during it) is never repeated:
`interrupted_message` says what is known and what is left.
"""

from __future__ import annotations

from magicstick_host.domain.model_cache.blockers import Blockers
from magicstick_host.domain.model_cache.capability import about_gib
from magicstick_host.domain.model_cache.inventory import (
    CACHE_ROOTS_BY_ID,
    HUGGINGFACE,
    SHARED_BLOBS,
    CacheInventory,
    clearable_entry,
)
from magicstick_host.domain.model_cache.shared import STORE_DIR, blob_path
from magicstick_host.hf_store_format import kept_in_sweeps, sweep_detail

__all__ = ["kept_in_sweeps", "sweep_detail"]  # the sweep step's detail, read by the decisions
from typing import TYPE_CHECKING

from magicstick_host.lite_dataclasses import dataclass

if TYPE_CHECKING:
    from typing import Any

MODEL_STARTED = "A model started during cleanup. Remaining cache files were kept."
# Ollama's manifests go before its blobs: a cleanup stopped in between leaves unreferenced
# blobs (which Ollama prunes), never a manifest that names a deleted blob
OLLAMA_ORDER = ("manifests", "blobs")
# shared-store payloads deleted by one step: each is one flock, two unlinks and a manifest read,
# so a batch stays well within a tick, and a cache of thousands still clears in a few ticks
MAX_SWEEP_BATCH = 500


@dataclass(frozen=True)
class CleanupEntry:
    cache: str  # huggingface | ollama
    name: str  # a top-level entry the allow-list names
    root_identity: tuple[int, int]  # (st_dev, st_ino) of the root when it was planned
    bytes: int  # as the walk counted it

    @property
    def path(self) -> str:
        if self.cache == SHARED_BLOBS:
            return blob_path(HUGGINGFACE.path, self.name)
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
        # after the models--* entries: only then does no repository link to these any more
        entries.extend(CleanupEntry(SHARED_BLOBS, b.name, root.identity, b.bytes)
                       for b in root.shared_blobs)
    return tuple(entries)


def next_batch(remaining: tuple[CleanupEntry, ...]) -> tuple[CleanupEntry, ...]:
    """What the next step deletes: the first entry, or the run of shared-store payloads it
    starts (at most MAX_SWEEP_BATCH, all of the same hub)."""
    first = remaining[0]
    if first.cache != SHARED_BLOBS:
        return (first,)
    batch = [first]
    for entry in remaining[1:MAX_SWEEP_BATCH]:
        if entry.cache != SHARED_BLOBS or entry.root_identity != first.root_identity:
            break
        batch.append(entry)
    return tuple(batch)


def kept_note(kept: dict[str, tuple[int, int]]) -> str:
    """The final message's sentence about shared blobs that stayed, "" when none did."""
    notes = []
    locked, in_use = kept["locked"], kept["in use"]
    if locked[0]:
        notes.append(f"{locked[0]} shared blob(s) ({about_gib(locked[1])}) were kept "
                     "because another process held their lock (a download in progress); "
                     "clear again later to free them.")
    if in_use[0]:
        notes.append(f"{in_use[0]} shared blob(s) ({about_gib(in_use[1])}) were kept "
                     "because a repository uses them again.")
    return " ".join(notes)

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
    done = f" {about_gib(freed, capital=True)} was freed before it stopped." if freed else ""
    return f"{len(remaining)} cache {what} ({about_gib(left)}) were kept.{done}"


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
    return f"The model caches were cleared: {about_gib(freed)} was freed."


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
    """Found in progress after a crash: the deletion of `entry` (or of the batch of shared
    blobs it starts) may be partial, and is never resumed. `remaining` still includes it."""
    if entry.cache == SHARED_BLOBS:
        what = (f"the shared blobs in {HUGGINGFACE.path}/{STORE_DIR} were being deleted; it is "
                "not resumed. Some of them may be deleted.")
    else:
        what = (f"{entry.path} was being deleted; it is not resumed. That entry may be partly "
                "deleted.")
    return (f"The cleanup was interrupted while {what} {kept_summary(remaining, freed)} "
            "Review the Model cache page and clear again if needed.")
