"""The walk of both cache roots: sizes, hard links, and every way the inventory becomes
untrusted (symlinks on the way, nested mounts, too many inodes, too slow)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from magicstick_host.domain.model_cache.inventory import clearable_entry
from magicstick_host.sim.model_cache import NESTED_MOUNT, add_many_files
from magicstick_host.sim.writer import create_host
from tests.model_cache.helpers import HUB, OLLAMA, bare_root, limits, ticking, walk, write
from tests.model_cache.mounts import mounted


def blocks(path: Path) -> int:
    return os.lstat(path).st_blocks * 512


def test_missing_roots_are_empty_caches(tmp_path: Path) -> None:
    inv = walk(bare_root(tmp_path))
    assert inv.trusted and inv.reclaimable_bytes == 0 and inv.inodes == 0
    assert [(r.id, r.identity, r.used_bytes) for r in inv.roots] == [
        ("huggingface", None, 0), ("huggingface-xet", None, 0), ("ollama", None, 0)]
    assert inv.total_bytes and inv.free_bytes is not None


def test_allocated_bytes_each_inode_once(tmp_path: Path) -> None:
    root = bare_root(tmp_path)
    a = write(root, f"{HUB}/models--a/blobs/1", 10_000)
    write(root, f"{HUB}/models--a/blobs/2", 5000)
    os.link(a, root / f"{HUB}/models--a/blobs/hard")  # the same inode twice
    os.link(a, root / f"{HUB}/models--b")  # and again in another entry: counted once overall
    os.symlink("blobs/1", root / f"{HUB}/models--a/link")
    write(root, f"{HUB}/datasets--d/x", 3000)
    inv = walk(root)
    hub = inv.root("huggingface")
    assert hub is not None and hub.identity is not None
    sizes = {e.name: e.bytes for e in hub.entries}
    model_a = (blocks(root / f"{HUB}/models--a") + blocks(root / f"{HUB}/models--a/blobs")
               + blocks(a) + blocks(root / f"{HUB}/models--a/blobs/2")
               + blocks(root / f"{HUB}/models--a/link"))
    assert sizes["models--a"] == model_a
    assert sizes["models--b"] == 0  # its inode was already counted in models--a
    assert sizes["datasets--d"] > 0
    assert hub.used_bytes == blocks(root / HUB) + sum(sizes.values())
    assert hub.reclaimable_bytes == sizes["models--a"] + sizes["models--b"]
    assert [e.name for e in hub.clearable_entries] == ["models--a", "models--b"]


def test_simulated_host_caches(tmp_path: Path) -> None:
    create_host("strix-halo-ubuntu-26.04-model-cache", tmp_path / "h")
    inv = walk(tmp_path / "h")
    assert inv.trusted
    hub, ollama = inv.root("huggingface"), inv.root("ollama")
    assert hub is not None and ollama is not None
    assert [e.name for e in hub.clearable_entries] == [
        "models--Qwen--Qwen3-8B", "models--meta-llama--Llama-3.2-1B"]
    assert {e.name for e in hub.entries} >= {"datasets--rajpurkar--squad", "token",
                                             "stored_tokens", ".locks", "version.txt"}
    assert [e.name for e in ollama.clearable_entries] == ["blobs", "manifests"]
    assert "keep-me.txt" in {e.name for e in ollama.entries}
    assert inv.reclaimable_bytes > 4 * 64 * 1024


@pytest.mark.parametrize(("name", "ok"), [
    ("models--Qwen--Qwen3-8B", True), ("models--a.b_c-d", True), ("models--", False),
    ("models--a/b", False), ("models--a b", False), ("datasets--x", False), ("token", False),
    ("stored_tokens", False), ("Models--x", False), ("xmodels--x", False), ("models--é", False),
])
def test_huggingface_allow_list(name: str, ok: bool) -> None:
    assert clearable_entry("huggingface", name) is ok


@pytest.mark.parametrize(("name", "ok"), [
    ("blobs", True), ("manifests", True), ("blobs2", False), ("models--x", False), ("", False)])
def test_ollama_allow_list(name: str, ok: bool) -> None:
    assert clearable_entry("ollama", name) is ok
    assert clearable_entry("nosuch", name) is False


def test_symlinked_root_scenario_is_untrusted(tmp_path: Path) -> None:
    create_host("strix-halo-ubuntu-26.04-model-cache-symlinked-root", tmp_path / "h")
    inv = walk(tmp_path / "h")
    assert not inv.trusted
    assert "/root/.cache/huggingface/hub is a symbolic link" in inv.problem
    assert inv.reclaimable_bytes == 0


@pytest.mark.parametrize("component", ["root", "root/.cache", "root/.ollama"])
def test_symlinked_component_is_untrusted(tmp_path: Path, component: str) -> None:
    root = bare_root(tmp_path)
    (root / "real" / component).mkdir(parents=True)
    (root / component).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(f"{'../' * component.count('/')}real/{component}", root / component)
    write(root, f"real/{HUB}/models--a/x")
    inv = walk(root)
    assert not inv.trusted and f"/{component} is a symbolic link" in inv.problem


def test_symlinks_inside_are_fine_and_not_followed(tmp_path: Path) -> None:
    create_host("strix-halo-ubuntu-26.04-model-cache-symlink-inside", tmp_path / "h")
    inv = walk(tmp_path / "h")
    assert inv.trusted, inv.problem
    hub = inv.root("huggingface")
    assert hub is not None
    sizes = {e.name: e.bytes for e in hub.entries}
    # the link itself is an entry (to be unlinked); what it points to is not counted
    assert "models--linked" in sizes and sizes["models--linked"] < 4096 * 2


def test_nested_mount_in_the_table_is_untrusted(tmp_path: Path) -> None:
    create_host("strix-halo-ubuntu-26.04-model-cache-nested-mount", tmp_path / "h")
    inv = walk(tmp_path / "h")
    assert not inv.trusted
    assert f"mounted at {NESTED_MOUNT}" in inv.problem


def test_unreadable_mount_table_is_untrusted(tmp_path: Path) -> None:
    root = bare_root(tmp_path)
    (root / "proc/self/mountinfo").unlink()
    assert "mount table" in walk(root).problem
    (root / "proc/self/mountinfo").write_text("garbage\n")
    assert "cannot be parsed" in walk(root).problem


def test_real_tmpfs_below_a_root_is_untrusted(tmp_path: Path) -> None:
    root = bare_root(tmp_path)
    write(root, f"{OLLAMA}/blobs/a")
    with mounted(root / OLLAMA / "manifests"):
        write(root, f"{OLLAMA}/manifests/m")
        inv = walk(root)
    assert not inv.trusted
    assert "/root/.ollama/models/manifests" in inv.problem


def test_real_bind_mount_of_the_same_filesystem_below_a_root_is_untrusted(
    tmp_path: Path,
) -> None:
    root = bare_root(tmp_path)
    write(root, "srv/shared/weights")
    write(root, f"{HUB}/models--a/x")
    with mounted(root / HUB / "models--b", bind_from=root / "srv/shared"):
        inv = walk(root)
    assert not inv.trusted and "separate mount" in inv.problem


def test_a_bind_mount_at_the_root_itself_is_fine(tmp_path: Path) -> None:
    """What systemd's ReadWritePaths= makes of a root: the same directory, as its own mount."""
    root = bare_root(tmp_path)
    write(root, f"{OLLAMA}/blobs/a", 5000)
    with mounted(root / OLLAMA, bind_from=root / OLLAMA):
        inv = walk(root)
    assert inv.trusted, inv.problem
    assert inv.reclaimable_bytes > 0


def test_inode_limit(tmp_path: Path) -> None:
    root = bare_root(tmp_path)
    assert add_many_files(root, 1000, per_directory=100) == 1000
    assert walk(root, limits=limits(model_cache_max_inodes=1000)).trusted
    inv = walk(root, limits=limits(model_cache_max_inodes=999))
    assert not inv.trusted and "more than 999 files" in inv.problem
    assert inv.inodes == 1000  # it stopped at the first one over


def test_time_limit_uses_the_walks_clock(tmp_path: Path) -> None:
    root = bare_root(tmp_path)
    add_many_files(root, 600, per_directory=100)
    # 1 s per clock reading: the deadline (10 s) passes at the second look, after 512 entries
    inv = walk(root, limits=limits(model_cache_walk_time_s=10.0), monotonic=ticking(6.0))
    assert not inv.trusted and "longer than 10 s" in inv.problem
    assert walk(root, monotonic=ticking(0.0)).trusted
