"""Hugging Face's shared blob store, judged as huggingface_hub judges it. Pure.

model-cache.md, "Hugging Face's shared blob store". huggingface_hub 1.32 and later keeps each
Xet-downloaded file once per cache: `hub/blobs/<2 hex>/<64 hex>` (the bytes), a `<64 hex>.refs`
manifest beside it (one reference per line, relative to `hub/`, e.g.
`models--org--name/blobs/<etag>`), a `<64 hex>.lock`, and the marker
`hub/blobs/.huggingface-shared-blobs` holding "1\\n". A repository's `blobs/<etag>` is then a
relative symlink into the store. The rules below follow the library's own
(`huggingface_hub/utils/_shared_blobs.py`: `_read_valid_manifest_references`,
`_shared_blob_target`, `sweep_shared_blob`), and are stricter in one way, never looser:
- a manifest is a hint: a reference holds only if the walk saw that symlink, leading to this
  blob; a missing, unreadable, oversized or undecodable manifest keeps its blob (the library
  "leaks the shared blob rather than risk deleting referenced content");
- a blob is reclaimable when every reference that holds lies in an entry the cleanup deletes;
- stricter: a symlink the walk saw leading to the blob from an entry the cleanup keeps
  (`datasets--*`, `spaces--*`, `kernels--*`) keeps it even when the manifest does not list it.
The store directory, its marker, the prefix directories and the `.lock` files are never
deleted (the lock file is the library's, and another process may be about to take it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

# the format, shared with the sweep effect (names re-exported: this module's vocabulary)
from magicstick_host.hf_store_format import (
    LOCK_SUFFIX,
    MANIFEST_SUFFIX,
    MARKER,
    MARKER_CONTENT,
    MAX_MANIFEST_BYTES,
    MAX_MANIFEST_LINES,
    MAX_MARKER_BYTES,
    PREFIX,
    REPO_DIR,
    STORE_DIR,
    XET_HASH,
    blob_path,
    is_repo_blob,
    is_store_name,
    link_target,
    manifest_references,
    marker_valid,
)
from magicstick_host.lite_dataclasses import dataclass

__all__ = [
    "LOCK_SUFFIX", "MANIFEST_SUFFIX", "MARKER", "MARKER_CONTENT", "MAX_MANIFEST_BYTES",
    "MAX_MANIFEST_LINES", "MAX_MARKER_BYTES", "PREFIX", "REPO_DIR", "STORE_DIR", "XET_HASH",
    "StoreFacts", "blob_path", "is_repo_blob", "is_store_name", "link_target",
    "manifest_references", "marker_valid", "reclaimable_blobs",
]

@dataclass(frozen=True)
class StoreFacts:
    """What one walk saw of the store. `blobs`: payload name -> allocated bytes of it and its
    manifest (as the walk counted them, each inode once); `manifests`: payload name -> the
    manifest's bytes (None: absent or unreadable); `links`: `<repo>/blobs/<file>` -> the
    payload it leads to (None: a symlink elsewhere; a regular file is not listed)."""

    marker: bool
    blobs: Mapping[str, int]
    manifests: Mapping[str, bytes | None]
    links: Mapping[tuple[str, ...], str | None]


def reclaimable_blobs(
    store: StoreFacts, deleted_entry: Callable[[str], bool]
) -> dict[str, int]:
    """The payloads the cleanup may delete once the entries `deleted_entry` names are gone:
    name -> allocated bytes (payload and manifest). An unmarked store has none."""
    if not store.marker:
        return {}
    kept_users: set[str] = set()
    for parts, target in store.links.items():
        if target is not None and not deleted_entry(parts[0]):
            kept_users.add(target)
    found: dict[str, int] = {}
    for name, size in store.blobs.items():
        if name in kept_users:
            continue
        references = manifest_references(store.manifests.get(name))
        if references is None:
            continue
        holding = [r for r in references if store.links.get(r) == name]
        if all(deleted_entry(r[0]) for r in holding):
            found[name] = size
    return found
