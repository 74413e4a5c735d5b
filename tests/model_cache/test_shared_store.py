"""Hugging Face's shared blob store (model-cache.md): what the walk counts as reclaimable, and
the sweep effect, on hand-built and hostile trees. Agreement with the library itself on trees
it wrote is tests/owners/test_huggingface_hub.py; here are the shapes it never writes."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from magicstick_host.domain.model_cache import shared
from magicstick_host.domain.model_cache.blockers import Blockers
from magicstick_host.domain.model_cache.capability import model_cache_section
from magicstick_host.domain.model_cache.cleanup import (
    kept_in_sweeps,
    kept_note,
    next_batch,
    plan_entries,
    sweep_detail,
)
from magicstick_host.domain.model_cache.inventory import HUGGINGFACE, SHARED_BLOBS
from magicstick_host.effects.model_cache_shared import sweep_shared_blobs
from tests.model_cache.helpers import HUB, bare_root, walk

A, B, C = "a" * 64, "b" * 64, "c" * 64


def payload(hub: Path, name: str, refs: list[str] | bytes | None, size: int = 8192) -> Path:
    """A store payload as the library writes it, its manifest listing `refs` (raw bytes for
    a hostile one; None: no manifest), and each `<repo>/blobs/<file>` ref as a symlink."""
    store = hub / "blobs"
    (store / name[:2]).mkdir(parents=True, exist_ok=True)
    (store / shared.MARKER).write_text("1\n")
    (store / name[:2] / name).write_bytes(b"w" * size)
    (store / name[:2] / f"{name}.lock").touch()
    if isinstance(refs, bytes):
        (store / name[:2] / f"{name}.refs").write_bytes(refs)
    elif refs is not None:
        (store / name[:2] / f"{name}.refs").write_text("".join(r + "\n" for r in refs))
        for ref in refs:
            link = hub / ref
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(f"../../blobs/{name[:2]}/{name}", link)
    return store / name[:2] / name


def reclaimable(root: Path) -> set[str]:
    inv = walk(root)
    assert inv.trusted, inv.problem
    hub = inv.root("huggingface")
    assert hub is not None
    return {b.name for b in hub.shared_blobs}


def test_only_payloads_no_kept_entry_uses_are_reclaimable(tmp_path: Path) -> None:
    root = bare_root(tmp_path)
    hub = root / HUB
    payload(hub, A, ["models--o--m/blobs/e1", "models--o--n/blobs/e1"])
    payload(hub, B, ["models--o--m/blobs/e2", "datasets--o--d/blobs/e2"])
    payload(hub, C, ["spaces--o--s/blobs/e3"])
    assert reclaimable(root) == {A}
    hub_inv = walk(root).root("huggingface")
    assert hub_inv is not None
    # each payload's bytes once (however many links), with its manifest's
    a = hub / "blobs/aa" / A
    sizes = {b.name: b.bytes for b in hub_inv.shared_blobs}
    assert sizes[A] == (os.lstat(a).st_blocks + os.lstat(f"{a}.refs").st_blocks) * 512


def test_a_reference_that_no_longer_holds_does_not_keep_it(tmp_path: Path) -> None:
    """The manifest is a hint: a dataset line whose symlink is gone, or leads elsewhere, does
    not keep the payload (as the library's sweep), and an orphan payload is reclaimable."""
    root = bare_root(tmp_path)
    hub = root / HUB
    payload(hub, A, ["models--o--m/blobs/e1", "datasets--o--d/blobs/e1"])
    os.unlink(hub / "datasets--o--d/blobs/e1")
    payload(hub, B, ["models--o--m/blobs/e2", "datasets--o--d/blobs/e2"])
    os.unlink(hub / "datasets--o--d/blobs/e2")
    os.symlink("../../blobs/cc/" + C, hub / "datasets--o--d/blobs/e2")
    payload(hub, C, [])
    assert reclaimable(root) == {A, B}  # C: the dataset's link leads to it now


@pytest.mark.parametrize("manifest", [
    None,  # missing
    b"\xff\xfe models--o--m/blobs/e1\n",  # not UTF-8
    b"models--o--m/blobs/e1\0\n",  # a NUL byte
    b"models--o--m/blobs/e1\n" * (shared.MAX_MANIFEST_LINES + 1),  # too many lines
    b"m" * (shared.MAX_MANIFEST_BYTES + 1),  # too large: never read whole
])
def test_an_unusable_manifest_keeps_its_payload(tmp_path: Path, manifest: bytes | None) -> None:
    root = bare_root(tmp_path)
    payload(root / HUB, A, manifest)
    inv = walk(root)
    assert inv.trusted and reclaimable(root) == set()


def test_a_manifest_or_payload_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    root = bare_root(tmp_path)
    hub = root / HUB
    outside = root / "srv/refs"
    outside.parent.mkdir(parents=True)
    outside.write_text("")
    path = payload(hub, A, None)
    os.symlink(outside, f"{path}.refs")  # an empty list of references, elsewhere
    payload(hub, B, [])
    os.unlink(hub / "blobs/bb" / B)
    os.symlink(outside, hub / "blobs/bb" / B)  # not a payload
    assert reclaimable(root) == set()


def test_lines_the_library_skips_are_skipped() -> None:
    data = (b"/abs/models--o--m/blobs/e\n../models--o--m/blobs/e\nmodels--o--m/x/e\n"
            b"models--o--m/blobs\n./models--o--m//blobs/e\r\nfoo--o/blobs/e\n")
    assert shared.manifest_references(data) == (("models--o--m", "blobs", "e"),)


@pytest.mark.parametrize("marker", [None, "2\n", "1"])
def test_an_unmarked_store_has_nothing_reclaimable(tmp_path: Path, marker: str | None) -> None:
    root = bare_root(tmp_path)
    hub = root / HUB
    payload(hub, A, ["models--o--m/blobs/e1"])
    if marker is None:
        os.unlink(hub / "blobs" / shared.MARKER)
    else:
        (hub / "blobs" / shared.MARKER).write_text(marker)
    assert reclaimable(root) == set()


def test_link_targets_are_judged_lexically() -> None:
    hub, parts = HUGGINGFACE.path, ("models--o--m", "blobs", "e")
    assert shared.link_target(hub, parts, f"../../blobs/aa/{A}") == A
    assert shared.link_target(hub, parts, f"{hub}/blobs/aa/{A}") == A
    assert shared.link_target(hub, parts, f"../../blobs/ab/{A}") is None  # wrong prefix
    assert shared.link_target(hub, parts, f"../../../hub2/blobs/aa/{A}") is None
    assert shared.link_target(hub, parts, f"../../blobs/aa/{A}/x") is None


def test_the_plan_sweeps_after_the_models_and_in_batches(tmp_path: Path) -> None:
    root = bare_root(tmp_path)
    hub = root / HUB
    for n in range(3):
        payload(hub, f"{n}" * 64, [f"models--o--m{n}/blobs/e"])
    (root / "root/.cache/huggingface/xet/logs").mkdir(parents=True)
    entries = plan_entries(walk(root))
    kinds = [e.cache for e in entries]
    assert kinds == ["huggingface"] * 3 + [SHARED_BLOBS] * 3 + ["huggingface-xet"]
    assert next_batch(entries[3:]) == entries[3:6]
    assert entries[3].path == f"{HUGGINGFACE.path}/blobs/00/{'0' * 64}"


def test_the_report_counts_the_store(tmp_path: Path) -> None:
    """Before #25 the cleanup was offered on a current cache with only the models' symlinks
    counted; the store's payloads are most of what it frees."""
    root = bare_root(tmp_path)
    payload(root / HUB, A, ["models--o--m/blobs/e1"], size=1024 * 1024)
    section = model_cache_section(walk(root), Blockers(), node_uid="uid")
    assert section["reclaimableBytes"] >= 1024 * 1024
    assert section["caches"][0]["clearable"] is True
    assert section["message"].startswith("Less than 0.1 GiB of downloaded models")


# -- the sweep effect ---------------------------------------------------------------------


def identity(path: Path) -> tuple[int, int]:
    st = os.lstat(path)
    return (st.st_dev, st.st_ino)


def test_the_sweep_deletes_payload_and_manifest_and_keeps_the_rest(tmp_path: Path) -> None:
    root = bare_root(tmp_path)
    hub = root / HUB
    path = payload(hub, A, ["models--o--m/blobs/e1"])
    os.unlink(hub / "models--o--m/blobs/e1")
    out = sweep_shared_blobs(str(root), HUGGINGFACE.path, identity(hub), [A])
    assert out.ok and out.freed_bytes > 8192 and not path.exists()
    assert not Path(f"{path}.refs").exists()
    assert Path(f"{path}.lock").is_file() and (hub / "blobs" / shared.MARKER).is_file()
    assert (hub / "blobs/aa").is_dir()
    assert kept_in_sweeps([out.detail]) == {"locked": (0, 0), "in use": (0, 0)}


def test_the_sweep_keeps_a_payload_in_use_again_or_locked(tmp_path: Path) -> None:
    root = bare_root(tmp_path)
    hub = root / HUB
    again = payload(hub, A, ["models--o--m/blobs/e1"])  # its link still holds
    locked = payload(hub, B, ["models--o--n/blobs/e2"])
    os.unlink(hub / "models--o--n/blobs/e2")
    fd = os.open(f"{locked}.lock", os.O_WRONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        out = sweep_shared_blobs(str(root), HUGGINGFACE.path, identity(hub), [A, B])
    finally:
        os.close(fd)
    assert out.ok and again.is_file() and locked.is_file() and out.freed_bytes == 0
    kept = kept_in_sweeps([out.detail])
    assert kept["locked"][0] == 1 and kept["in use"][0] == 1
    note = kept_note(kept)
    assert "another process held their lock" in note and "uses them again" in note


def test_the_sweep_refuses_a_replaced_hub_or_unmarked_store(tmp_path: Path) -> None:
    root = bare_root(tmp_path)
    hub = root / HUB
    path = payload(hub, A, [])
    out = sweep_shared_blobs(str(root), HUGGINGFACE.path, (1, 1), [A])
    assert not out.ok and "refused" in out.detail and path.exists()
    os.unlink(hub / "blobs" / shared.MARKER)
    out = sweep_shared_blobs(str(root), HUGGINGFACE.path, identity(hub), [A])
    assert not out.ok and "not a marked" in out.detail and path.exists()
    out = sweep_shared_blobs(str(root), HUGGINGFACE.path, identity(hub), ["../../etc"])
    assert not out.ok and path.exists()


def test_the_sweep_never_follows_a_symlinked_prefix_or_lock(tmp_path: Path) -> None:
    root = bare_root(tmp_path)
    hub = root / HUB
    payload(hub, A, [])
    elsewhere = root / "srv/aa"
    elsewhere.mkdir(parents=True)
    (elsewhere / A).write_bytes(b"precious")
    os.rename(hub / "blobs/aa", root / "srv/real-aa")
    os.symlink(elsewhere, hub / "blobs/aa")
    out = sweep_shared_blobs(str(root), HUGGINGFACE.path, identity(hub), [A])
    assert not out.ok and (elsewhere / A).read_bytes() == b"precious"
    os.unlink(hub / "blobs/aa")
    os.rename(root / "srv/real-aa", hub / "blobs/aa")
    lock = hub / "blobs/aa" / f"{A}.lock"
    os.unlink(lock)
    os.symlink(elsewhere / A, lock)
    out = sweep_shared_blobs(str(root), HUGGINGFACE.path, identity(hub), [A])
    assert not out.ok and (hub / "blobs/aa" / A).exists()
    assert (elsewhere / A).read_bytes() == b"precious"


def test_the_final_message_says_what_the_sweeps_kept() -> None:
    details = [sweep_detail(3, 100, (1, 4096), (0, 0)), sweep_detail(1, 10, (0, 0), (2, 8192))]
    kept = kept_in_sweeps(details)
    assert kept == {"locked": (1, 4096), "in use": (2, 8192)}


def test_the_manifests_of_one_walk_are_read_within_a_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many large manifests cannot fill the worker's memory: past the walk's budget a
    manifest counts as unreadable, and its payload is kept."""
    from magicstick_host.collect import model_cache_walk

    root = bare_root(tmp_path)
    hub = root / HUB
    payload(hub, A, ["models--o--m/blobs/e1"])
    payload(hub, B, ["models--o--n/blobs/e2"])
    line = len("models--o--m/blobs/e1\n")
    assert reclaimable(root) == {A, B}
    monkeypatch.setattr(model_cache_walk, "MAX_MANIFESTS_BYTES", line + 1)
    assert reclaimable(root) == {A}  # names sorted: aa/ is read first, then the budget is gone
