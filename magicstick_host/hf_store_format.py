"""The on-disk format of Hugging Face's shared blob store (huggingface_hub 1.32 and later), as the
library's own `huggingface_hub/utils/_shared_blobs.py` reads it. Pure, and shared by the
inventory's judgement (domain/model_cache/shared.py) and the sweep effect
(effects/model_cache_shared.py), which re-reads each manifest under the library's lock.

`hub/blobs/<2 hex>/<64 hex>` is a payload, `<64 hex>.refs` its manifest (one reference per line,
relative to `hub/`, e.g. `models--org--name/blobs/<etag>`), `<64 hex>.lock` the library's lock,
`hub/blobs/.huggingface-shared-blobs` (holding "1\\n") marks the store. Also here: the sweep
step's detail (`sweep_detail`), which the final message adds up (`kept_in_sweeps`): the wording
and its pattern live together.
"""

from __future__ import annotations

import posixpath
import re

STORE_DIR = "blobs"
MARKER = ".huggingface-shared-blobs"
MARKER_CONTENT = b"1\n"  # the library's SHARED_BLOBS_LAYOUT_VERSION, newline-terminated
MANIFEST_SUFFIX = ".refs"
LOCK_SUFFIX = ".lock"
XET_HASH = re.compile(r"[0-9a-f]{64}")
PREFIX = re.compile(r"[0-9a-f]{2}")
# the library's _REPO_DIR_REGEX (constants.REPO_TYPES_MAPPING)
REPO_DIR = re.compile(r"(?:datasets|kernels|models|spaces)--.+")
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


# what the sweep effect says about the payloads it kept
def sweep_detail(deleted: int, freed: int, locked: tuple[int, int], in_use: tuple[int, int]) -> str:
    """`locked`, `in_use`: (payloads, allocated bytes) kept because another process held the
    library's lock, or because a repository links to it again (or its manifest went bad)."""
    return (f"deleted {deleted} shared blobs ({freed} bytes freed); "
            f"kept {locked[0]} locked ({locked[1]} bytes); kept {in_use[0]} in use ({in_use[1]} "
            "bytes)")


_KEPT = re.compile(r"kept (\d+) (locked|in use) \((\d+) bytes\)")


def kept_in_sweeps(details: list[str]) -> dict[str, tuple[int, int]]:
    """"locked" / "in use" -> (payloads, bytes) kept, over the sweep steps' details."""
    kept = {"locked": (0, 0), "in use": (0, 0)}
    for detail in details:
        for found in _KEPT.finditer(detail):
            count, why, size = found.groups()
            n, b = kept[why]
            kept[why] = (n + int(count), b + int(size))
    return kept
