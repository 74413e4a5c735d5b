"""The operation's pure decisions: what is deleted in which order, when it stops, what the
administrator is told."""

from __future__ import annotations

import pytest

from magicstick_host.domain.model_cache.blockers import Blockers
from magicstick_host.domain.model_cache.cleanup import (
    MODEL_STARTED,
    CleanupEntry,
    DeleteNext,
    Finish,
    deletion_failed_message,
    interrupted_message,
    next_step,
    plan_entries,
)
from magicstick_host.domain.model_cache.inventory import CacheEntry, CacheInventory, RootInventory

GIB = 1024**3


def inventory(problem: str = "") -> CacheInventory:
    hub = RootInventory("huggingface", (1, 2), 0, (
        CacheEntry(".locks", 1, False), CacheEntry("models--a", 2 * GIB, True),
        CacheEntry("models--b", GIB, True), CacheEntry("token", 1, False)))
    ollama = RootInventory("ollama", (1, 3), 0, (
        CacheEntry("blobs", 5 * GIB, True), CacheEntry("keep", 1, False),
        CacheEntry("manifests", 1000, True)))
    return CacheInventory((hub, ollama), problem=problem)


def test_plan_order_and_only_clearable_entries() -> None:
    planned = plan_entries(inventory())
    assert [(e.cache, e.name) for e in planned] == [
        ("huggingface", "models--a"), ("huggingface", "models--b"),
        ("ollama", "manifests"), ("ollama", "blobs")]
    assert planned[2].root_identity == (1, 3)
    assert planned[0].path == "/root/.cache/huggingface/hub/models--a"
    with pytest.raises(ValueError):
        plan_entries(inventory(problem="mount"))


def test_entries_round_trip_and_tampering_is_refused() -> None:
    entry = plan_entries(inventory())[0]
    assert CleanupEntry.from_json(entry.to_json()) == entry
    with pytest.raises(ValueError):
        CleanupEntry.from_json({**entry.to_json(), "name": "token"})


def test_next_step() -> None:
    planned = plan_entries(inventory())
    ok = Blockers()
    assert next_step(planned, blockers=ok, mount_problem="", freed=0) == DeleteNext(planned[0])
    done = next_step((), blockers=ok, mount_problem="", freed=9 * GIB)
    assert done == Finish("Succeeded", "The model caches were cleared: about 9.0 GiB was freed.")
    started = next_step(planned[2:], blockers=Blockers(found=("KubeAI Model a/b",)),
                        mount_problem="", freed=3 * GIB)
    assert isinstance(started, Finish) and started.phase == "Failed"
    assert started.message.startswith(MODEL_STARTED)
    assert "KubeAI Model a/b" in started.message and "2 cache entries" in started.message
    assert "3.0 GiB was freed" in started.message
    cannot = next_step(planned, blockers=Blockers(error="HTTP 503"), mount_problem="", freed=0)
    assert isinstance(cannot, Finish) and cannot.phase == "Failed" and "HTTP 503" in cannot.message
    mounted = next_step(planned, blockers=ok, mount_problem="a mount at /x", freed=0)
    assert isinstance(mounted, Finish) and "a mount at /x" in mounted.message


def test_failure_and_interruption_messages() -> None:
    planned = plan_entries(inventory())
    failed = deletion_failed_message(planned[1], "x is a separate mount", planned[1:], GIB)
    assert "x is a separate mount" in failed and "3 cache entries" in failed
    interrupted = interrupted_message(planned[3], planned[3:], 8 * GIB)
    assert "not resumed" in interrupted and "/root/.ollama/models/blobs" in interrupted
    assert "1 cache entry (about 5.0 GiB)" in interrupted
