"""The tree port: nothing is ever followed, and mounts show up as mounts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from magicstick_host.ports.hosttree import RootedHostTree, TreeError
from tests.model_cache.mounts import mounted


def make(root: Path, rel: str, text: str = "x") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_probe_absent_and_present(tmp_path: Path) -> None:
    tree = RootedHostTree(str(tmp_path))
    assert tree.probe("/root/.ollama/models") is None
    (tmp_path / "root/.ollama/models").mkdir(parents=True)
    st = tree.probe("/root/.ollama/models")
    assert st is not None and st.is_dir
    assert st.identity == (os.lstat(tmp_path / "root/.ollama/models").st_dev,
                           os.lstat(tmp_path / "root/.ollama/models").st_ino)


@pytest.mark.parametrize("link", ["root", "root/.cache", "root/.cache/huggingface/hub"])
def test_a_symlink_on_the_way_is_refused(tmp_path: Path, link: str) -> None:
    real = tmp_path / "elsewhere"
    (real / "root/.cache/huggingface/hub").mkdir(parents=True)
    target = real / link
    (tmp_path / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, tmp_path / link)
    tree = RootedHostTree(str(tmp_path))
    with pytest.raises(TreeError) as exc:
        tree.probe("/root/.cache/huggingface/hub")
    assert exc.value.reason == "symlink"
    assert exc.value.path == "/" + link


def test_a_file_on_the_way_is_not_a_directory(tmp_path: Path) -> None:
    make(tmp_path, "root/.ollama", "")
    with pytest.raises(TreeError) as exc:
        RootedHostTree(str(tmp_path)).probe("/root/.ollama/models")
    assert exc.value.reason == "not a directory"


def test_unnormalised_paths_are_refused(tmp_path: Path) -> None:
    tree = RootedHostTree(str(tmp_path))
    for path in ("root", "/root/../etc", "/root/./x"):
        with pytest.raises(TreeError):
            tree.probe(path)


def test_walk_reports_symlinks_and_never_enters_them(tmp_path: Path) -> None:
    make(tmp_path, "outside/secret/a")
    make(tmp_path, "outside/secret/b")
    make(tmp_path, "c/blobs/x")
    os.symlink("../../outside/secret", tmp_path / "c/blobs/link")
    os.symlink("/outside/secret", tmp_path / "c/abs")
    entries = list(RootedHostTree(str(tmp_path)).walk("/c"))
    names = ["/".join(e.parts) for e in entries]
    assert names == ["abs", "blobs", "blobs/link", "blobs/x"]
    by_name = dict(zip(names, entries, strict=True))
    assert by_name["blobs/link"].stat.is_symlink and by_name["abs"].stat.is_symlink
    assert by_name["blobs"].mount_id is not None


def test_walk_of_a_symlinked_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    os.symlink("real", tmp_path / "c")
    with pytest.raises(TreeError) as exc:
        list(RootedHostTree(str(tmp_path)).walk("/c"))
    assert exc.value.reason == "symlink"


def test_walk_depth_limit(tmp_path: Path) -> None:
    deep = tmp_path / "c" / "/".join(["d"] * 6)
    deep.mkdir(parents=True)
    with pytest.raises(TreeError) as exc:
        list(RootedHostTree(str(tmp_path)).walk("/c", max_depth=4))
    assert exc.value.reason == "too deep"


def test_a_closed_walk_leaves_no_descriptor_open(tmp_path: Path) -> None:
    for i in range(5):
        make(tmp_path, f"c/d{i}/e/f")
    before = len(os.listdir("/proc/self/fd"))
    walk = RootedHostTree(str(tmp_path)).walk("/c")
    next(walk)
    next(walk)
    walk.close()
    assert len(os.listdir("/proc/self/fd")) == before


def test_mounts_differ_in_mount_id_and_tmpfs_in_st_dev(tmp_path: Path) -> None:
    make(tmp_path, "c/plain/x")
    (tmp_path / "source").mkdir()
    make(tmp_path, "source/y")
    with mounted(tmp_path / "c/tmp"), mounted(tmp_path / "c/bind", bind_from=tmp_path / "source"):
        make(tmp_path, "c/tmp/z")
        tree = RootedHostTree(str(tmp_path))
        top = tree.probe("/c")
        assert top is not None
        entries = {"/".join(e.parts): e for e in tree.walk("/c")}
        root_mount = tree.mount_id("/c")
        assert entries["plain"].mount_id == root_mount
        assert entries["bind"].mount_id != root_mount
        assert entries["bind"].stat.dev == top.dev  # a bind mount of the same filesystem
        assert entries["tmp"].mount_id != root_mount
        assert entries["tmp"].stat.dev != top.dev


def test_statvfs_of_the_host_root(tmp_path: Path) -> None:
    total, free = RootedHostTree(str(tmp_path)).statvfs("/")
    vfs = os.statvfs(tmp_path)
    assert total == vfs.f_blocks * vfs.f_frsize and 0 <= free <= total


def test_lstat_does_not_follow(tmp_path: Path) -> None:
    os.symlink("nowhere", tmp_path / "dangling")
    tree = RootedHostTree(str(tmp_path))
    st = tree.lstat("/dangling")
    assert st is not None and st.is_symlink
    assert tree.lstat("/absent") is None
    assert tree.lstat("/dangling/below") is None


def test_resolve_follows_symlinks_inside_the_root(tmp_path: Path) -> None:
    (tmp_path / "root/.cache/huggingface/hub").mkdir(parents=True)
    (tmp_path / "data").mkdir()
    os.symlink("/root/.cache/huggingface/hub", tmp_path / "data/models")  # absolute: re-rooted
    os.symlink("../root", tmp_path / "data/home")
    os.symlink("loop2", tmp_path / "data/loop1")
    os.symlink("loop1", tmp_path / "data/loop2")
    tree = RootedHostTree(str(tmp_path))
    assert tree.resolve("/data/models") == "/root/.cache/huggingface/hub"
    assert tree.resolve("/data/models/models--x/not-yet") == (
        "/root/.cache/huggingface/hub/models--x/not-yet")
    assert tree.resolve("/data/home/.ollama") == "/root/.ollama"
    assert tree.resolve("//data/./home/.ollama/../.cache") == "/root/.cache"
    assert tree.resolve("/data/home/../home") == "/home"  # `..` of the target, as the kernel
    assert tree.resolve("/srv/absent/../x") == "/srv/x"
    assert tree.resolve("/../../data/home") == "/root"
    with pytest.raises(TreeError) as exc:
        tree.resolve("/data/loop1")
    assert exc.value.reason == "symlink loop"
