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

import posixpath
from collections.abc import Callable, Mapping

from magicstick_host.lazy_pattern import LazyPattern
from magicstick_host.lite_dataclasses import dataclass

STORE_DIR = "blobs"
MARKER = ".huggingface-shared-blobs"
MARKER_CONTENT = b"1\n"  # the library's SHARED_BLOBS_LAYOUT_VERSION, newline-terminated
MANIFEST_SUFFIX = ".refs"
LOCK_SUFFIX = ".lock"
XET_HASH = LazyPattern(r"[0-9a-f]{64}")
PREFIX = LazyPattern(r"[0-9a-f]{2}")
# the library's _REPO_DIR_REGEX (constants.REPO_TYPES_MAPPING)
REPO_DIR = LazyPattern(r"(?:datasets|kernels|models|spaces)--.+")
# a manifest holds one short line per repository file that uses the blob: bounded, since it
# comes from outside (a larger one keeps its blob, it never stops the walk)
MAX_MANIFEST_BYTES = 1024 * 1024
MAX_MANIFEST_LINES = 10_000
MAX_MARKER_BYTES = 64


def is_store_name(prefix: str, name: str) -> bool:
    """`blobs/<prefix>/<name>` is a payload's place in the store."""
    return (PREFIX.fullmatch(prefix) is not None and XET_HASH.fullmatch(name) is not None
            and name[:2] == prefix)


def blob_path(hub: str, name: str) -> str:
    """The host path of the store payload `name` (64 hex) in the hub at host path `hub`."""
    return f"{hub}/{STORE_DIR}/{name[:2]}/{name}"


def is_repo_blob(parts: tuple[str, ...]) -> bool:
    """`<repo>/blobs/<file>` below the hub: a place the library links into the store."""
    return (len(parts) == 3 and parts[1] == "blobs" and bool(parts[2])
            and REPO_DIR.fullmatch(parts[0]) is not None)


def link_target(hub: str, parts: tuple[str, ...], target: str) -> str | None:
    """The store payload (64 hex) that the symlink `hub/<parts>` with content `target` leads
    to, or None when it leads anywhere else. Lexical, as the library's `_shared_blob_target`:
    the payload itself is checked by the walk, never by following the link."""
    if "\0" in target or not target:
        return None
    base = hub + "/" + "/".join(parts[:-1])
    full = posixpath.normpath(target if target.startswith("/") else base + "/" + target)
    store = hub + "/" + STORE_DIR + "/"
    if not full.startswith(store):
        return None
    rest = full[len(store):].split("/")
    if len(rest) != 2 or not is_store_name(rest[0], rest[1]):
        return None
    return rest[1]


def manifest_references(data: bytes | None) -> tuple[tuple[str, ...], ...] | None:
    """The references of a manifest that name a repository blob (others are skipped, as the
    library skips them), or None when it cannot be used: absent, unreadable, larger than
    MAX_MANIFEST_BYTES or MAX_MANIFEST_LINES, not UTF-8, or with a NUL byte."""
    if data is None or len(data) > MAX_MANIFEST_BYTES:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\0" in text:
        return None
    lines = text.splitlines()  # as the library reads it (str.splitlines)
    if len(lines) > MAX_MANIFEST_LINES:
        return None
    found = []
    for line in lines:
        if line.startswith("/"):
            continue
        parts = tuple(p for p in line.split("/") if p not in ("", "."))
        if ".." in parts or not is_repo_blob(parts):
            continue
        found.append(parts)
    return tuple(found)


def marker_valid(data: bytes | None) -> bool:
    return data == MARKER_CONTENT


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
