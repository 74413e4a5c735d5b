"""Shared by the end-to-end tests of clear-model-cache: the simulated host with caches, what
must go and what must stay, and the namespace the blockers live in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.world import World
from tests.kubeserver.fixtures import KubeCluster
from tests.model_cache.cluster import clear_model_workloads, drop_namespace, new_namespace

CACHES = "strix-halo-ubuntu-26.04-model-cache"
READY = "strix-halo-ubuntu-26.04-ready"
HUB = "root/.cache/huggingface/hub"
OLLAMA = "root/.ollama/models"
XET = "root/.cache/huggingface/xet"
ENTRIES = (
    f"{HUB}/models--Qwen--Qwen3-8B",
    f"{HUB}/models--meta-llama--Llama-3.2-1B",
    f"{XET}/https___huggingface.co",
    f"{XET}/logs",
    f"{OLLAMA}/manifests",
    f"{OLLAMA}/blobs",
)
# next to the models, and never deleted (credentials, datasets, Ollama's key)
SURVIVORS = (
    f"{HUB}/datasets--rajpurkar--squad/blobs/train",
    f"{HUB}/token",
    f"{HUB}/stored_tokens",
    f"{HUB}/version.txt",
    f"{HUB}/.locks/models--Qwen--Qwen3-8B/x.lock",
    "root/.cache/huggingface/token",
    f"{OLLAMA}/keep-me.txt",
    "root/.ollama/id_ed25519",
    f"{HUB}/blobs/.huggingface-shared-blobs",
)


def store_payloads(world: World) -> set[str]:
    """The names of the payloads in the hub's shared blob store."""
    store = world.root / HUB / "blobs"
    return {p.name for p in store.glob("??/*") if len(p.name) == 64}


def dataset_payload(world: World) -> str:
    """The store payload the simulated dataset shares with a model: it must stay."""
    link = world.root / HUB / "datasets--rajpurkar--squad/blobs"
    return next(p.resolve().name for p in link.iterdir() if p.is_symlink())


def present(world: World, rel: str) -> bool:
    return (world.root / rel).is_symlink() or (world.root / rel).exists()


def entries_left(world: World) -> list[str]:
    return [rel for rel in ENTRIES if present(world, rel)]


def assert_survivors(world: World) -> None:
    missing = [rel for rel in SURVIVORS if not (world.root / rel).is_file()]
    assert missing == [], missing
    # the dataset's file still reads through its symlink into the store
    dataset = world.root / HUB / "datasets--rajpurkar--squad/snapshots"
    assert all(p.read_bytes() for p in dataset.rglob("*") if p.is_symlink())


def snapshot(root: Path) -> set[str]:
    """Every path under the host root (without following symlinks)."""
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def section(world: World) -> dict[str, Any]:
    report = world.report()
    assert report is not None
    cache: dict[str, Any] = report["modelCache"]
    return cache


def fresh_report(world: World) -> dict[str, Any]:
    """The report after the report's interval: the blockers are read again."""
    world.clock.advance(61)
    world.tick()
    report = world.report()
    assert report is not None
    return report


def clear(world: World, **overrides: Any) -> dict[str, Any]:
    """The dashboard asks for the cleanup it was shown."""
    plan_id = overrides.pop("planId", None) or section(world)["id"]
    return world.create_request("clear-model-cache", planId=plan_id, **overrides)


def status(world: World) -> dict[str, Any]:
    obj = world.hostop() or {}
    found: dict[str, Any] = obj.get("status") or {}
    return found


@pytest.fixture
def fresh_cluster(kube: KubeCluster) -> None:
    """No model-serving object left by an earlier test (of any module) in the shared
    apiserver."""
    clear_model_workloads(kube)


@pytest.fixture
def ns(kube: KubeCluster, fresh_cluster: None) -> Iterator[str]:
    name = new_namespace(kube)
    yield name
    drop_namespace(kube, name)
