"""The observer's reading of carve-out selections (a changed index is a worker effect; the
simulator re-rendering a file that a killed write left empty is not) and of the model-cache
roots (a removed entry is an effect, of its own kind when the cleanup may not delete it)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.soak.observe import cache_entries, cache_removals, carveout_writes

HF = "root/.cache/huggingface/hub"
PATH = "sys/devices/pci0000:00/0000:c5:00.0/uma/carveout"


def test_a_changed_index_is_an_effect_and_an_unchanged_one_is_not() -> None:
    assert [e["to"] for e in carveout_writes({PATH: "0"}, {PATH: "9"}, "b")] == ["9"]
    assert carveout_writes({PATH: "3"}, {PATH: "3"}, "b") == []


def test_a_torn_write_is_an_effect_and_its_re_render_is_not() -> None:
    torn = carveout_writes({PATH: "0"}, {PATH: ""}, "b")
    assert [(e["from"], e["to"], e["bootId"]) for e in torn] == [("0", "", "b")]
    assert carveout_writes({PATH: ""}, {PATH: "0"}, "b") == []


def test_removed_cache_entries_are_effects_by_whether_the_cleanup_may_delete_them(
    tmp_path: Path,
) -> None:
    hub = tmp_path / "root/.cache/huggingface/hub"
    for name in ("models--Qwen--Qwen3-8B", "token"):
        (hub / name).mkdir(parents=True)
    before = cache_entries(tmp_path)
    assert before == {f"/{HF}/models--Qwen--Qwen3-8B": True, f"/{HF}/token": False}
    (hub / "models--Qwen--Qwen3-8B").rmdir()
    (hub / "token").rmdir()
    gone = cache_removals(before, cache_entries(tmp_path), "b")
    assert [e["effect"] for e in gone] == ["cache-entry-removed",
                                           "cache-entry-removed-not-clearable"]
    assert cache_removals(before, before, "b") == []


def test_removed_store_payloads_are_one_sweep_or_a_violation(tmp_path: Path) -> None:
    """The shared store (model-cache.md): payloads only models use go as one sweep effect per
    tick; one a dataset links to is its own kind of effect, which no step explains."""
    hub = tmp_path / HF
    store = hub / "blobs"
    names = [c * 64 for c in "abc"]
    for name in names:
        (store / name[:2]).mkdir(parents=True)
        (store / name[:2] / name).write_bytes(b"x")
    (hub / "datasets--d/blobs").mkdir(parents=True)
    os.symlink(f"../../blobs/cc/{'c' * 64}", hub / "datasets--d/blobs/e")
    (hub / "models--m/blobs").mkdir(parents=True)
    os.symlink(f"../../blobs/aa/{'a' * 64}", hub / "models--m/blobs/e")
    before = cache_entries(tmp_path)
    assert [before[f"/{HF}/blobs/{n[:2]}/{n}"] for n in names] == [True, True, False]
    for name in names:
        (store / name[:2] / name).unlink()
    gone = cache_removals(before, cache_entries(tmp_path), "b")
    effects = [(e["effect"], len(e.get("paths", [e.get("path")]))) for e in gone]
    assert effects == [("shared-blobs-swept", 2), ("shared-blob-removed-not-clearable", 1)]
