"""The model-cache id between the report and Preparing, end to end (the soak at seed 835002:
a request made from a fresh report failed in Preparing with "a cache directory was replaced").

The id names the Node's UID and the roots' (st_dev, st_ino). Boots keep the roots (a real
boot keeps directories on disk, and so does the simulator); the failure came from a Preparing
tick on which Kubernetes could not be read, so the id was computed without the Node's UID."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from magicstick_host.ports.kube import RealKube
from tests.harness.world import World
from tests.model_cache.e2e import (
    CACHES,
    ENTRIES,
    HUB,
    OLLAMA,
    assert_survivors,
    clear,
    entries_left,
    fresh_cluster,
    fresh_report,
    status,
)

pytestmark = [pytest.mark.apiserver, pytest.mark.usefixtures("fresh_cluster")]
__all__ = ["fresh_cluster"]  # the fixture


def root_identities(world: World) -> list[tuple[int, int]]:
    return [(st.st_dev, st.st_ino) for st in (os.lstat(world.root / HUB),
                                             os.lstat(world.root / OLLAMA))]


def quick_boot(world: World) -> None:
    """A boot (a restart, or power back after a loss) that kept the host down for seconds,
    not World.boot's minutes: the fake clock stays near the apiserver's, so a request made
    afterwards is within its lifetime."""
    world.boot()
    world.clock.wall -= timedelta(seconds=100)


@contextmanager
def kubernetes_unreachable(world: World, tmp_path: Path) -> Iterator[None]:
    """The worker's ticks meet a refused connection (the soak's proxy: reset, blackhole)."""
    config = yaml.safe_load(Path(world.kube.worker_kubeconfig).read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    path = tmp_path / "unreachable.kubeconfig"
    path.write_text(json.dumps(config))
    reachable, world.worker = world.worker, RealKube(str(path), timeout=5)
    try:
        yield
    finally:
        world.worker = reachable


def test_boots_keep_the_cache_roots_and_the_published_id(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, CACHES)
    before = world.published()["modelCache"]["id"]
    identities = root_identities(world)
    quick_boot(world)  # a restart
    world.tick()
    quick_boot(world)  # a power loss: to the host, just another boot
    report = fresh_report(world)
    assert root_identities(world) == identities
    assert report["bootId"] == world.boot_id
    assert report["modelCache"]["id"] == before
    clear(world, planId=report["modelCache"]["id"])
    assert world.drive() == "Succeeded"
    assert entries_left(world) == []
    assert_survivors(world)


def test_kubernetes_unreadable_in_preparing_waits_and_nothing_is_claimed(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, CACHES)
    quick_boot(world)
    clear(world, planId=fresh_report(world)["modelCache"]["id"])
    world.tick()  # intake: Accepted, then Preparing
    assert world.state().operation.phase == "Preparing"  # type: ignore[union-attr]
    with kubernetes_unreachable(world, tmp_path):
        world.tick()
    op = world.state().operation
    assert op is not None and op.phase == "Preparing", op.message
    assert "replaced" not in op.message and "Kubernetes" in op.message
    assert len(entries_left(world)) == len(ENTRIES)
    # Kubernetes answers again: the same request goes on, checked afresh
    assert world.drive() == "Succeeded"
    assert entries_left(world) == []
    assert_survivors(world)
    assert status(world)["phase"] == "Succeeded"
