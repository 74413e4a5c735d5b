"""What a clear-model-cache operation records in state.json: the entries Preparing fixed for
deletion (each with the identity of its root when it was walked), and what is done so far."""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.decisions import Situation
from magicstick_host.domain.model_cache.cleanup import CleanupEntry
from magicstick_host.domain.model_cache.inventory import clearable_entry
from magicstick_host.domain.request import Accepted
from magicstick_host.domain.state import Operation
from magicstick_host.lite_dataclasses import dataclass, field

if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class PlannedEntry:
    cache: str  # huggingface | ollama
    name: str  # a top-level entry the allow-list names (checked again when it is used)
    root_dev: int
    root_ino: int
    bytes: int  # allocated bytes, as the walk counted them


@dataclass(frozen=True)
class CleanupData:
    node_uid: str = ""
    # Preparing fixed the list; `remaining` shrinks by one entry per successful deletion
    planned: bool = False
    remaining: list[PlannedEntry] = field(default_factory=list)
    deleted: int = 0
    freed_bytes: int = 0


def start(req: Accepted, now: Situation) -> CleanupData:
    return CleanupData(node_uid=now.cluster.node_uid)


def data_of(op: Operation) -> CleanupData:
    data = op.data
    assert isinstance(data, CleanupData)
    return data


def planned(entries: tuple[CleanupEntry, ...]) -> list[PlannedEntry]:
    return [PlannedEntry(e.cache, e.name, e.root_identity[0], e.root_identity[1], e.bytes)
            for e in entries]


def remaining_entries(data: CleanupData) -> tuple[CleanupEntry, ...] | None:
    """The entries still to delete; None when the state names one the allow-list does not
    (a tampered or foreign state file deletes nothing)."""
    entries = []
    for p in data.remaining:
        if not clearable_entry(p.cache, p.name):
            return None
        entries.append(CleanupEntry(p.cache, p.name, (p.root_dev, p.root_ino), p.bytes))
    return tuple(entries)


def legacy_data(current: dict[str, Any]) -> tuple[CleanupData, list[str]]:
    """The original worker never ran clear-model-cache; a file that names it migrates as a
    finished record with nothing planned."""
    return CleanupData(), []
