"""The deletion effect: one allowed entry, never through a symlink, never across a mount.

The property test builds random trees (files, directories, symlinks inside and pointing out of
the cache, relative and absolute, hard links to files inside and outside) and deletes every
top-level name it made, allowed or not: nothing outside `models--*`, `blobs` and `manifests`
changes, and nothing outside the host root does.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magicstick_host.domain.model_cache.inventory import (
    CACHE_ROOTS_BY_ID,
    HUGGINGFACE,
    clearable_entry,
)
from magicstick_host.effects.model_cache import DeleteOutcome
from magicstick_host.effects.model_cache import delete_cache_entry as delete_at
from magicstick_host.effects.model_cache_shared import sweep_shared_blobs
from magicstick_host.sim.writer import create_host
from tests.model_cache.helpers import HUB, OLLAMA, bare_root, walk, write
from tests.model_cache.mounts import mounted

XET = "root/.cache/huggingface/xet"
ROOT_OF = {"huggingface": HUB, "huggingface-xet": XET, "ollama": OLLAMA}


def delete_cache_entry(
    root: str, cache_id: str, entry: str, ident: tuple[int, int]
) -> DeleteOutcome:
    """As the operation calls the effect: the root's path from the product's table."""
    return delete_at(root, CACHE_ROOTS_BY_ID[cache_id].path, entry, ident)


def identity(root: Path, cache_id: str) -> tuple[int, int]:
    st_ = os.lstat(root / ROOT_OF[cache_id])
    return (st_.st_dev, st_.st_ino)


def snapshot(top: Path, skip: set[Path] = frozenset()) -> dict[str, tuple[str, str]]:  # type: ignore[assignment]
    """Every path below `top` (not below a skipped one): its type and content or target."""
    found: dict[str, tuple[str, str]] = {}
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        base = Path(dirpath)
        dirnames[:] = [d for d in dirnames if base / d not in skip]
        for name in dirnames + filenames:
            path = base / name
            if path in skip:
                continue
            st_ = os.lstat(path)
            rel = str(path.relative_to(top))
            if stat.S_ISLNK(st_.st_mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st_.st_mode):
                found[rel] = ("dir", "")
            else:
                found[rel] = ("file", path.read_bytes().decode("latin-1"))
    return found


def test_the_simulated_host_is_cleared_and_everything_else_stays(tmp_path: Path) -> None:
    create_host("strix-halo-ubuntu-26.04-model-cache-symlink-inside", tmp_path / "h")
    root = tmp_path / "h"
    before = walk(root)
    hub = before.root("huggingface")
    assert hub is not None and hub.identity is not None and len(hub.shared_blobs) == 3
    allowed = {root / HUB / e.name for e in hub.clearable_entries}
    allowed |= {root / XET / name for name in os.listdir(root / XET)}
    allowed |= {root / OLLAMA / "blobs", root / OLLAMA / "manifests"}
    for blob in hub.shared_blobs:  # the payload and its manifest; its lock file stays
        allowed |= {root / HUB / "blobs" / blob.name[:2] / f"{blob.name}{suffix}"
                    for suffix in ("", ".refs")}
    kept = snapshot(root, allowed)
    freed = 0
    for cache_id in ("huggingface", "huggingface-xet", "ollama"):
        inv_root = before.root(cache_id)
        assert inv_root is not None and inv_root.identity is not None
        for entry in inv_root.clearable_entries:
            out = delete_cache_entry(str(root), cache_id, entry.name, inv_root.identity)
            assert out.ok, out.detail
            assert out.freed_bytes == entry.bytes, entry.name
            freed += out.freed_bytes
        if cache_id == "huggingface":  # once the models are gone, as the operation does
            out = sweep_shared_blobs(str(root), HUGGINGFACE.path, hub.identity,
                                     [b.name for b in hub.shared_blobs])
            assert out.ok and out.freed_bytes == sum(b.bytes for b in hub.shared_blobs), out
            freed += out.freed_bytes
    assert freed == before.reclaimable_bytes
    assert snapshot(root) == kept
    assert (root / "srv/precious/weights.bin").read_text().startswith("outside the cache")
    assert (root / HUB / "token").is_file() and (root / HUB / "datasets--rajpurkar--squad").is_dir()
    assert (root / "root/.ollama/id_ed25519").is_file()
    assert (root / OLLAMA / "keep-me.txt").is_file()
    after = walk(root)
    assert after.trusted and after.reclaimable_bytes == 0


def test_anything_but_one_entry_is_refused(tmp_path: Path) -> None:
    root = bare_root(tmp_path)
    write(root, f"{HUB}/models--a/f")
    write(root, f"{HUB}/token")
    ident = identity(root, "huggingface")
    for name in ("..", ".", "models--a/../token", "", "models--a/f", "/token", "a\0b"):
        out = delete_cache_entry(str(root), "huggingface", name, ident)
        assert not out.ok and "refused" in out.detail and out.freed_bytes == 0
    assert not delete_at(str(root), "/", "root", (1, 1)).ok
    assert (root / HUB / "token").exists() and (root / HUB / "models--a/f").exists()


def test_another_root_than_the_reviewed_one_is_refused(tmp_path: Path) -> None:
    root = bare_root(tmp_path)
    write(root, f"{HUB}/models--a/f")
    ident = identity(root, "huggingface")
    os.rename(root / HUB, root / "root/.cache/huggingface/old-hub")
    write(root, f"{HUB}/models--a/f")
    out = delete_cache_entry(str(root), "huggingface", "models--a", ident)
    assert not out.ok and "not the directory that was reviewed" in out.detail
    assert (root / HUB / "models--a/f").exists()


def test_a_symlinked_root_is_refused(tmp_path: Path) -> None:
    root = bare_root(tmp_path)
    write(root, "srv/hub/models--a/f")
    (root / HUB).parent.mkdir(parents=True)
    os.symlink("../../../srv/hub", root / HUB)
    st_ = os.stat(root / HUB)
    out = delete_cache_entry(str(root), "huggingface", "models--a", (st_.st_dev, st_.st_ino))
    assert not out.ok and "symlink" in out.detail
    assert (root / "srv/hub/models--a/f").exists()


def test_gone_is_fine(tmp_path: Path) -> None:
    root = bare_root(tmp_path)
    assert delete_cache_entry(str(root), "ollama", "blobs", (1, 1)).ok  # no root at all
    (root / OLLAMA).mkdir(parents=True)
    out = delete_cache_entry(str(root), "ollama", "blobs", identity(root, "ollama"))
    assert out.ok and out.freed_bytes == 0


def test_a_mount_inside_an_entry_stops_the_deletion_and_is_kept(tmp_path: Path) -> None:
    root = bare_root(tmp_path)
    write(root, f"{OLLAMA}/blobs/a")
    write(root, "srv/shared/precious")
    ident = identity(root, "ollama")
    with mounted(root / OLLAMA / "blobs/tmp"):
        write(root, f"{OLLAMA}/blobs/tmp/on-tmpfs")
        out = delete_cache_entry(str(root), "ollama", "blobs", ident)
        assert not out.ok and "another filesystem" in out.detail
        assert (root / OLLAMA / "blobs/tmp/on-tmpfs").exists()
    with mounted(root / OLLAMA / "manifests/bind", bind_from=root / "srv/shared"):
        out = delete_cache_entry(str(root), "ollama", "manifests", ident)
        assert not out.ok and "separate mount" in out.detail
    assert (root / "srv/shared/precious").exists()


# -- the property test ------------------------------------------------------------------------



def spec_allows(cache_id: str, name: str) -> bool:
    """model-cache.md's allow-list, written out here independently of the product's."""
    if cache_id == "huggingface":
        return re.fullmatch(r"models--[A-Za-z0-9_.-]+", name) is not None
    return name in ("blobs", "manifests")


TOP_NAMES = {
    "huggingface": ["models--a", "models--b.c", "datasets--x", "token", "stored_tokens", ".locks",
                    "models--", "version.txt"],
    "ollama": ["blobs", "manifests", "keep.txt", "blobs2"],
}
INNER = ["x", "y", "snap", "blobs", ".."]


@st.composite
def trees(draw: st.DrawFn) -> list[tuple[str, ...]]:
    """Operations that build a tree: (kind, cache, top, inner path, link target kind)."""
    ops = []
    for _ in range(draw(st.integers(1, 25))):
        cache = draw(st.sampled_from(["huggingface", "ollama"]))
        top = draw(st.sampled_from(TOP_NAMES[cache]))
        depth = draw(st.integers(0, 3))
        inner = "/".join(draw(st.sampled_from(INNER[:4])) for _ in range(depth))
        kind = draw(st.sampled_from(["file", "dir", "link", "hardlink"]))
        target = draw(st.sampled_from(["outside-file", "outside-dir", "inside", "sibling-root",
                                       "absolute-outside", "host-etc", "dangling"]))
        ops.append((kind, cache, top, inner, target))
    return ops


def build(tmp: Path, ops: list[tuple[str, ...]]) -> Path:
    root = bare_root(tmp)
    outside = tmp / "outside"  # beyond the host root
    write(tmp, "outside/file", 3000)
    (outside / "dir").mkdir()
    write(tmp, "outside/dir/inner", 100)
    write(root, "etc/hostname", 5)
    write(root, "root/.cache/huggingface/token", 5)
    for kind, cache, top, inner, target in ops:
        base = root / ROOT_OF[cache] / top
        path = base / inner if inner else base
        try:
            if kind == "dir":
                path.mkdir(parents=True, exist_ok=True)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists() or path.is_symlink():
                continue
            if kind == "file":
                path.write_bytes(b"w" * 700)
            elif kind == "hardlink":
                source = {"outside-file": outside / "file",
                          "host-etc": root / "etc/hostname"}.get(target, root / "etc/hostname")
                os.link(source, path)
            else:
                link = {
                    "outside-file": os.path.relpath(outside / "file", path.parent),
                    "outside-dir": os.path.relpath(outside / "dir", path.parent),
                    "inside": ".",
                    "sibling-root": os.path.relpath(root / OLLAMA, path.parent),
                    "absolute-outside": str(outside / "dir"),
                    "host-etc": "/etc",  # absolute: the *machine's* /etc if it were followed
                    "dangling": "nowhere",
                }[target]
                os.symlink(link, path)
        except (NotADirectoryError, FileExistsError):
            continue  # a component is a file or a link: skip that operation
    return root


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees())
def test_nothing_but_allowed_entries_is_ever_deleted(ops: list[tuple[str, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        root = build(tmp, ops)
        allowed: set[Path] = set()
        for cache_id, rel in ROOT_OF.items():
            directory = root / rel
            if directory.is_dir() and not directory.is_symlink():
                allowed |= {directory / n for n in os.listdir(directory)
                            if spec_allows(cache_id, n)}
        kept = snapshot(tmp, allowed)
        etc_before = snapshot(Path("/etc/systemd")) if Path("/etc/systemd").is_dir() else {}
        for cache_id, rel in ROOT_OF.items():
            directory = root / rel
            if not directory.is_dir():
                continue
            ident = identity(root, cache_id)
            for name in TOP_NAMES[cache_id]:
                if clearable_entry(cache_id, name):  # the product's allow-list
                    out = delete_cache_entry(str(root), cache_id, name, ident)
                    assert out.ok, out.detail
                    assert not os.path.lexists(directory / name)
            for name in ("..", "models--a/../token", "blobs/.."):
                assert not delete_cache_entry(str(root), cache_id, name, ident).ok
        assert snapshot(tmp) == kept
        assert (tmp / "outside/file").read_bytes() == b"x" * 3000
        if etc_before:
            assert snapshot(Path("/etc/systemd")) == etc_before
