"""The cached inventory: reused while nothing changes, walked again when something does (but
not more often than the interval), always walked when asked to, and a cache file that cannot
be used only ever costs a walk."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from magicstick_host import schemas
from magicstick_host.domain.model_cache.capability import model_cache_id
from magicstick_host.ports.model_cache_store import CACHE_FILE, ModelCacheStore
from magicstick_host.sim.model import Host
from magicstick_host.sim.model_cache import NESTED_MOUNT, mountinfo
from tests.model_cache.helpers import BOOT, HUB, OLLAMA, at, bare_root, inventory_of, walk, write

MIN = 60.0  # DEFAULT_LIMITS.model_cache_min_walk_interval_s
REWALK = 300.0


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = bare_root(tmp_path)
    write(root, f"{HUB}/models--a/blobs/1", 5000)
    write(root, f"{OLLAMA}/blobs/b", 5000)
    return root


@pytest.fixture
def state(tmp_path: Path) -> Path:
    directory = tmp_path / "state"
    directory.mkdir(mode=0o700)
    return directory


def test_the_walk_is_saved_0600_and_valid(root: Path, state: Path) -> None:
    inventory_of(root, store_dir=state).walk_now(at(100), BOOT)
    path = state / CACHE_FILE
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    doc = json.loads(path.read_text())
    assert schemas.errors("model-cache-inventory", doc) == []
    assert f"/{HUB}/models--a/blobs" in doc["dirs"]
    assert doc["dirs"]["/root"] is not None


def test_reused_while_nothing_changes(root: Path, state: Path) -> None:
    first = inventory_of(root, store_dir=state)
    walked = first.for_report(at(100), BOOT)
    assert first.last_source == "walked"
    for t in (110, 100 + MIN, 100 + REWALK - 1):
        again = inventory_of(root, store_dir=state)
        assert again.for_report(at(t), BOOT).roots == walked.roots  # free space is fresh
        assert again.last_source == "cached"
    later = inventory_of(root, store_dir=state)
    later.for_report(at(100 + REWALK), BOOT)
    assert later.last_source == "walked"


def test_a_change_is_seen_after_the_interval(root: Path, state: Path) -> None:
    inventory_of(root, store_dir=state).for_report(at(100), BOOT)
    write(root, f"{HUB}/models--c/x", 9000)  # a new entry: the hub's mtime changes
    soon = inventory_of(root, store_dir=state)
    soon_inv = soon.for_report(at(100 + MIN - 1), BOOT)
    assert soon.last_source == "cached"
    hub = soon_inv.root("huggingface")
    assert hub is not None and "models--c" not in {e.name for e in hub.entries}
    later = inventory_of(root, store_dir=state)
    later_inv = later.for_report(at(100 + MIN), BOOT)
    assert later.last_source == "walked"
    hub = later_inv.root("huggingface")
    assert hub is not None and "models--c" in {e.name for e in hub.entries}


@pytest.mark.parametrize("change", ["deep-file", "root-appears", "root-symlinked", "removed"])
def test_changes_the_cheap_check_sees(root: Path, state: Path, tmp_path: Path,
                                      change: str) -> None:
    (root / "root/.ollama/models/blobs/b").unlink()
    (root / "root/.ollama/models/blobs").rmdir()
    (root / "root/.ollama/models").rmdir()
    inventory_of(root, store_dir=state).for_report(at(100), BOOT)
    if change == "deep-file":
        write(root, f"{HUB}/models--a/blobs/new")
    elif change == "root-appears":
        write(root, f"{OLLAMA}/blobs/b")
    elif change == "root-symlinked":
        os.rename(root / "root/.cache", root / "elsewhere")
        os.symlink("../elsewhere", root / "root/.cache")
    else:
        (root / f"{HUB}/models--a/blobs/1").unlink()
    again = inventory_of(root, store_dir=state)
    inv = again.for_report(at(100 + MIN), BOOT)
    assert again.last_source == "walked"
    if change == "root-symlinked":
        assert not inv.trusted and "/root/.cache is a symbolic link" in inv.problem


@pytest.mark.parametrize("change", ["root-replaced", "root-removed", "component-replaced",
                                    "root-appears"])
def test_a_root_not_the_one_walked_is_seen_at_once(root: Path, state: Path,
                                                   change: str) -> None:
    """Inside the interval too: the report's id names the roots' identities, and a request
    made from an id naming directories no longer there could only be refused."""
    if change == "root-appears":
        shutil.rmtree(root / OLLAMA)
    first = inventory_of(root, store_dir=state).for_report(at(100), BOOT)
    if change == "root-replaced":
        os.rename(root / HUB, root / "hub.old")
        write(root, f"{HUB}/models--a/blobs/1", 5000)
    elif change == "root-removed":
        shutil.rmtree(root / OLLAMA)
    elif change == "component-replaced":
        os.rename(root / "root/.cache", root / "cache.old")
        write(root, f"{HUB}/models--a/blobs/1", 5000)
    else:
        write(root, f"{OLLAMA}/blobs/b", 5000)
    soon = inventory_of(root, store_dir=state)
    inv = soon.for_report(at(101), BOOT)
    assert soon.last_source == "walked"
    assert model_cache_id("uid", inv) != model_cache_id("uid", first)
    assert model_cache_id("uid", inv) == model_cache_id("uid", walk(root))


def test_content_changes_alone_still_wait_for_the_interval(root: Path, state: Path) -> None:
    inventory_of(root, store_dir=state).for_report(at(100), BOOT)
    (root / f"{HUB}/models--a/blobs/1").unlink()
    os.utime(root / HUB)  # the root's mtime moves, its identity does not
    soon = inventory_of(root, store_dir=state)
    soon.for_report(at(101), BOOT)
    assert soon.last_source == "cached"


def test_walk_now_always_walks(root: Path, state: Path) -> None:
    inventory_of(root, store_dir=state).for_report(at(100), BOOT)
    write(root, f"{HUB}/models--c/x")
    now = inventory_of(root, store_dir=state)
    inv = now.walk_now(at(101), BOOT)
    assert now.last_source == "walked"
    hub = inv.root("huggingface")
    assert hub is not None and "models--c" in {e.name for e in hub.entries}


def test_another_boot_walks_again(root: Path, state: Path) -> None:
    inventory_of(root, store_dir=state).for_report(at(100), BOOT)
    again = inventory_of(root, store_dir=state)
    again.for_report(at(5), "another-boot")
    assert again.last_source == "walked"


def test_a_mount_appearing_is_seen_at_once(root: Path, state: Path) -> None:
    inventory_of(root, store_dir=state).for_report(at(100), BOOT)
    host = Host("x", "x", 1024, mounts=[NESTED_MOUNT])
    (root / "proc/self/mountinfo").write_text(mountinfo(host))
    again = inventory_of(root, store_dir=state)
    inv = again.for_report(at(101), BOOT)
    assert again.last_source == "mounts" and not inv.trusted
    assert inv.reclaimable_bytes == 0


@pytest.mark.parametrize("damage", ["garbage", "schema", "symlink", "mode", "directory", "torn",
                                    "deep"])
def test_a_cache_file_that_cannot_be_used_means_a_walk(
    root: Path, state: Path, tmp_path: Path, damage: str
) -> None:
    inventory_of(root, store_dir=state).for_report(at(100), BOOT)
    path = state / CACHE_FILE
    text = path.read_text()
    path.unlink()
    if damage == "garbage":
        path.write_bytes(b"\x00\xffnot json")
    elif damage == "schema":
        doc = json.loads(text)
        doc["inventory"]["roots"][0]["usedBytes"] = -1
        path.write_text(json.dumps(doc))
    elif damage == "symlink":
        (tmp_path / "planted.json").write_text(text)
        os.symlink(tmp_path / "planted.json", path)
    elif damage == "mode":
        path.write_text(text)
        os.chmod(path, 0o644)
    elif damage == "directory":
        path.mkdir()
    elif damage == "deep":  # the C decoder recurses: RecursionError, not ValueError
        path.write_text("[" * 200_000)
    else:
        path.write_text(text[: len(text) // 2])
    if not path.is_symlink() and path.is_file():
        os.chmod(path, 0o644 if damage == "mode" else 0o600)
    again = inventory_of(root, store_dir=state)
    inv = again.for_report(at(101), BOOT)
    assert again.last_source == "walked" and inv.trusted
    if damage == "symlink":
        assert (tmp_path / "planted.json").read_text() == text  # never written through


def test_what_is_clearable_is_never_taken_from_the_file(root: Path, state: Path) -> None:
    write(root, f"{HUB}/token", 5000)
    inventory_of(root, store_dir=state).for_report(at(100), BOOT)
    path = state / CACHE_FILE
    doc = json.loads(path.read_text())
    # a tampered cache cannot add entries the allow-list refuses
    doc["inventory"]["roots"][0]["entries"].append({"name": "models--../../etc", "bytes": 1})
    path.write_text(json.dumps(doc))
    os.chmod(path, 0o600)
    inv = inventory_of(root, store_dir=state).for_report(at(101), BOOT)
    hub = inv.root("huggingface")
    assert hub is not None
    clearable = {e.name for e in hub.clearable_entries}
    assert "token" not in clearable and "models--../../etc" not in clearable


def test_saving_an_invalid_document_is_a_bug(state: Path) -> None:
    with pytest.raises(ValueError):
        ModelCacheStore(state).save({"schemaVersion": 2})
    assert not (state / CACHE_FILE).exists()


def test_an_unwritable_state_directory_costs_only_the_cache(root: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    inv = inventory_of(root, store_dir=missing).for_report(at(100), BOOT)
    assert inv.trusted and inv.reclaimable_bytes > 0
