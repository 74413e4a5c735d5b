"""Simulated hosts with model caches: written once, kept across the simulator's re-renders
(a boot), and a mount table on every host."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from magicstick_host.domain.parsers.mountinfo import parse_mountinfo
from magicstick_host.sim.boot import boot_host
from magicstick_host.sim.model import Host
from magicstick_host.sim.model_cache import (
    LAYOUTS,
    MODEL_CACHE_SCENARIOS,
    NESTED_MOUNT,
    add_many_files,
    populate_model_caches,
    with_model_caches,
)
from magicstick_host.sim.scenarios import SCENARIOS
from magicstick_host.sim.writer import build_host, create_host, load_host
from tests.model_cache.helpers import HUB, OLLAMA, bare_root, walk


def test_scenarios_are_listed() -> None:
    for name, _, _ in MODEL_CACHE_SCENARIOS:
        assert name in SCENARIOS
    assert build_host("strix-halo-ubuntu-26.04-model-cache").model_caches == [
        "huggingface", "ollama"]


def test_every_scenario_has_a_mount_table(tmp_path: Path) -> None:
    for name in ("strix-halo-ubuntu-26.04-ready",
                 "strix-halo-ubuntu-26.04-model-cache-nested-mount"):
        create_host(name, tmp_path / name)
        mounts = parse_mountinfo((tmp_path / name / "proc/self/mountinfo").read_text())
        assert mounts[0].mount_point == "/"
        assert (NESTED_MOUNT in {m.mount_point for m in mounts}) is name.endswith("nested-mount")


def test_a_deleted_cache_stays_deleted_across_a_boot(tmp_path: Path) -> None:
    root = tmp_path / "h"
    create_host("strix-halo-ubuntu-26.04-model-cache", root)
    shutil.rmtree(root / HUB / "models--Qwen--Qwen3-8B")
    shutil.rmtree(root / OLLAMA / "blobs")
    boot_host(root)
    assert not (root / HUB / "models--Qwen--Qwen3-8B").exists()
    assert not (root / OLLAMA / "blobs").exists()
    assert (root / HUB / "models--meta-llama--Llama-3.2-1B").is_dir()
    assert (root / HUB / "token").is_file() and (root / OLLAMA / "manifests").is_dir()
    assert load_host(root).model_caches == ["huggingface", "ollama"]


def test_blob_size_is_allocated(tmp_path: Path) -> None:
    host = with_model_caches(Host("x", "x", 1024), "ollama")
    host.model_cache_blob_bytes = 8 * 1024 * 1024
    root = bare_root(tmp_path)
    populate_model_caches(host, root)
    ollama = walk(root).root("ollama")
    assert ollama is not None and ollama.reclaimable_bytes >= 8 * 1024 * 1024


def test_unknown_layouts_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown model-cache layouts"):
        with_model_caches(Host("x", "x", 1024), "nfs")
    assert "nested-mount" in LAYOUTS


def test_many_files_are_exactly_as_many_inodes(tmp_path: Path) -> None:
    root = bare_root(tmp_path)
    assert add_many_files(root, 2345, per_directory=500) == 2345
    inv = walk(root)
    assert inv.trusted and inv.inodes == 2345
