"""Read-only views of one simulated host for the invariants: never the worker's own loaders,
which move or rewrite files; these only read.

- the local state (`state.json`, schema-checked, as the worker would accept it);
- the journal (every intact line; torn or garbled lines are skipped, as the worker skips them);
- the simulator's effects log, incrementally (only whole lines);
- the firmware carve-out selections in sysfs, whose writes the effects log does not record;
- the top-level entries of the model-cache roots, whose deletions it does not record either,
  and the payloads of the Hugging Face hub's shared blob store (model-cache.md), each with
  whether an entry the cleanup keeps (`datasets--*`, `spaces--*`) links to it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from magicstick_host import schemas
from magicstick_host.domain.model_cache import shared
from magicstick_host.domain.model_cache.inventory import CACHE_ROOTS, HUGGINGFACE
from magicstick_host.domain.state import State
from magicstick_host.domain.state_codec import state_from_json
from magicstick_host.sim.effects_log import EFFECTS_LOG

Json = dict[str, Any]
STATE_FILE = "state.json"
JOURNAL_FILE = "journal.jsonl"


def read_state(state_dir: Path) -> tuple[State | None, str]:
    """(state, "") or (None, why it cannot be read); (None, "") when there is none yet."""
    path = state_dir / STATE_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        return None, f"{path}: {exc}"
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        return None, f"{path}: not JSON: {exc}"
    problems = schemas.errors("state", doc)
    if problems:
        return None, f"{path}: schema: {problems[0]}"
    try:
        return state_from_json(doc), ""
    except (KeyError, TypeError, ValueError) as exc:
        return None, f"{path}: {exc!r}"


def read_journal(state_dir: Path) -> list[Json]:
    try:
        data = (state_dir / JOURNAL_FILE).read_bytes()
    except FileNotFoundError:
        return []
    entries = []
    for raw in data.split(b"\n"):
        try:
            doc = json.loads(raw)
        except ValueError:
            continue
        if isinstance(doc, dict):
            entries.append(doc)
    return entries


class EffectsTail:
    """The effects log of a simulated host, read on from where the last read stopped."""

    def __init__(self, root: Path) -> None:
        self.path = root / EFFECTS_LOG
        self.offset = 0

    def size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def new(self) -> list[Json]:
        try:
            with self.path.open("rb") as log:
                log.seek(self.offset)
                data = log.read()
        except FileNotFoundError:
            return []
        whole = data[: data.rfind(b"\n") + 1]
        self.offset += len(whole)
        out = []
        for line in whole.splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"effect": "unparsable-effects-line", "line": line[:200].decode(
                    errors="replace")})
        return out


def carveout_selections(root: Path) -> dict[str, str]:
    """Each GPU's `uma/carveout` content (the firmware memory option selected)."""
    out = {}
    for path in sorted((root / "sys" / "devices").glob("*/*/uma/carveout")):
        try:
            out[str(path.relative_to(root))] = path.read_text().strip()
        except OSError as exc:
            out[str(path.relative_to(root))] = f"<{exc.strerror}>"
    return out


def carveout_writes(before: dict[str, str], after: dict[str, str], boot_id: str) -> list[Json]:
    """The selections that changed during a tick, as effects.

    A real sysfs attribute takes a write whole or not at all; the simulator's stand-in is a
    regular file, which a tick killed between the worker's open (O_TRUNC) and its write leaves
    empty. The simulator renders such a file again from its model on its next write of the
    tree (during any later command): a change away from a value that is not an index is that
    re-render, not an effect of the worker."""
    return [
        {"effect": "carveout-write", "path": path, "from": before.get(path), "to": value,
         "bootId": boot_id}
        for path, value in after.items()
        if before.get(path) != value and (before.get(path) or "").strip().isdigit()
    ]


def cache_entries(root: Path) -> dict[str, bool]:
    """Each top-level entry of the host's model-cache roots -> whether the cleanup may delete
    it (domain/model_cache/inventory.py); a root that is a symlink is not looked into."""
    out = {}
    for spec in CACHE_ROOTS:
        directory = root / spec.path.lstrip("/")
        if directory.is_symlink() or not directory.is_dir():
            continue
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        out.update({f"{spec.path}/{name}": spec.clearable(name) for name in names})
    out.update(shared_payloads(root))
    return out


def shared_payloads(root: Path) -> dict[str, bool]:
    """Each payload of the hub's shared store -> whether the cleanup may delete it: False when
    a link from an entry it keeps leads to it (read here from the tree, not from the
    worker's walk)."""
    hub = root / HUGGINGFACE.path.lstrip("/")
    store = hub / shared.STORE_DIR
    if hub.is_symlink() or store.is_symlink() or not store.is_dir():
        return {}
    kept: set[str] = set()
    for link in hub.glob("*--*/blobs/*"):
        parts = tuple(link.relative_to(hub).parts)
        if link.is_symlink() and not HUGGINGFACE.clearable(parts[0]):
            target = shared.link_target(HUGGINGFACE.path, parts, os.readlink(link))
            if target is not None:
                kept.add(target)
    return {shared.blob_path(HUGGINGFACE.path, p.name): p.name not in kept
            for p in store.glob("??/*") if shared.is_store_name(p.parent.name, p.name)}


def cache_removals(before: dict[str, bool], after: dict[str, bool], boot_id: str) -> list[Json]:
    """The cache entries gone after a tick, as effects: the simulator's effects log does not
    see the worker's own unlinks. An entry the cleanup may not delete is its own kind of
    effect, which no step explains."""
    gone = [(path, clearable) for path, clearable in sorted(before.items()) if path not in after]
    store = f"{HUGGINGFACE.path}/{shared.STORE_DIR}/"
    found = [
        {"effect": "cache-entry-removed" if clearable else "cache-entry-removed-not-clearable",
         "path": path, "bootId": boot_id}
        for path, clearable in gone if not path.startswith(store)
    ]
    # payloads go a batch per step: one effect per tick that swept any, against its intent
    swept = [path for path, clearable in gone if path.startswith(store) and clearable]
    if swept:
        found.append({"effect": "shared-blobs-swept", "paths": swept, "bootId": boot_id})
    found += [{"effect": "shared-blob-removed-not-clearable", "path": path, "bootId": boot_id}
              for path, clearable in gone if path.startswith(store) and not clearable]
    return found
