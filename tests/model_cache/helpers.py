"""Shared helpers of the model-cache tests."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from magicstick_host.collect.model_cache import ModelCacheInventory
from magicstick_host.domain.limits import DEFAULT_LIMITS, Limits
from magicstick_host.domain.model_cache.inventory import CacheInventory
from magicstick_host.ports.clock import Instant
from magicstick_host.ports.hostfs import RootedHostFS
from magicstick_host.ports.hosttree import RootedHostTree
from magicstick_host.ports.model_cache_store import ModelCacheStore
from magicstick_host.sim.model import Host
from magicstick_host.sim.model_cache import mountinfo

HUB = "root/.cache/huggingface/hub"
OLLAMA = "root/.ollama/models"
BOOT = "0f8fad5b-d9cb-469f-a165-70867728950e"


def at(boottime: float) -> Instant:
    return Instant(wall=datetime(2026, 12, 1, 10, 0, tzinfo=UTC), boottime=boottime)


def bare_root(tmp: Path, mounts: tuple[str, ...] = ()) -> Path:
    """A host root with nothing but a mount table (and whatever the test adds)."""
    root = tmp / "host"
    (root / "proc/self").mkdir(parents=True, exist_ok=True)
    host = Host("bare", "bare", 1024, mounts=list(mounts))
    (root / "proc/self/mountinfo").write_text(mountinfo(host))
    return root


def write(root: Path, rel: str, size: int = 10) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    return path


def inventory_of(
    root: Path,
    *,
    store_dir: Path | None = None,
    limits: Limits = DEFAULT_LIMITS,
    monotonic: Callable[[], float] = time.monotonic,
) -> ModelCacheInventory:
    store = ModelCacheStore(store_dir) if store_dir is not None else None
    return ModelCacheInventory(RootedHostTree(str(root)), RootedHostFS(str(root)), store,
                               limits=limits, monotonic=monotonic)


def walk(root: Path, **kw: object) -> CacheInventory:
    return inventory_of(root, **kw).walk_now(at(100.0), BOOT)  # type: ignore[arg-type]


def limits(**kw: object) -> Limits:
    return replace(DEFAULT_LIMITS, **kw)  # type: ignore[arg-type]


def ticking(step: float) -> Callable[[], float]:
    """A monotonic clock that moves `step` seconds each time it is read."""
    counter = itertools.count()
    return lambda: next(counter) * step
