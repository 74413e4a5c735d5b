"""clear-model-cache end to end: a simulated host with model caches, the real tick, the real
test apiserver (issue 12, "Done when"): the cleanup, the report before and after, the
rejections, and a blocker that appears between two entries."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from magicstick_host.domain.model_cache.cleanup import MODEL_STARTED
from tests.harness.world import World
from tests.model_cache.cluster import pod
from tests.model_cache.e2e import (
    CACHES,
    ENTRIES,
    HUB,
    READY,
    assert_survivors,
    clear,
    dataset_payload,
    entries_left,
    fresh_cluster,
    fresh_report,
    ns,
    snapshot,
    status,
    store_payloads,
)

pytestmark = [pytest.mark.apiserver, pytest.mark.usefixtures("fresh_cluster")]
__all__ = ["fresh_cluster", "ns"]  # the fixtures


def test_a_cleanup_of_a_simulated_host(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, CACHES)
    report = world.published()
    cache = report["modelCache"]
    assert cache["supported"] is True and cache["blocked"] is False
    assert cache["reclaimableBytes"] > 0 and "clear-model-cache" in report["actions"]
    assert [c["id"] for c in cache["caches"]] == ["huggingface", "ollama"]
    assert all(c["clearable"] and c["usedBytes"] > 0 for c in cache["caches"])
    assert cache["totalBytes"] > 0 and 0 < cache["freeBytes"] <= cache["totalBytes"]
    payloads, kept = store_payloads(world), dataset_payload(world)
    assert len(payloads) == 4 and kept in payloads  # three only the models use, one shared
    clear(world)
    assert world.drive() == "Succeeded"
    op = world.state().operation
    assert op is not None
    assert op.message == "The model caches were cleared: less than 0.1 GiB was freed."
    assert entries_left(world) == []
    assert_survivors(world)
    # the store keeps only the dataset's payload (with its manifest and every lock file)
    assert store_payloads(world) == {kept}
    store = world.root / HUB / "blobs"
    assert {p.name for p in store.glob("??/*.refs")} == {f"{kept}.refs"}
    assert {p.name for p in store.glob("??/*.lock")} == {f"{n}.lock" for n in payloads}
    # one deletion per entry, each under the step protocol, and never one twice
    deleted = [s.inputs["entry"] for s in op.steps if s.name == "delete-cache-entry"]
    assert sorted(deleted) == sorted(os.path.basename(e) for e in ENTRIES)
    swept = [n for s in op.steps if s.name == "sweep-shared-blobs" for n in s.inputs["blobs"]]
    assert sorted(swept) == sorted(payloads - {kept})
    assert all(s.outcome == "done" for s in op.steps)
    events = [e["event"] for e in world.journal()]
    assert events.count("intent:delete-cache-entry") == len(ENTRIES)
    assert events.count("outcome:delete-cache-entry") == len(ENTRIES)
    assert events.count("outcome:sweep-shared-blobs") == 1
    # afterwards: nothing left to clear, so nothing offered
    after = fresh_report(world)
    assert after["modelCache"]["reclaimableBytes"] == 0
    assert after["modelCache"]["caches"][0]["usedBytes"] > 0  # what stays: datasets, tokens
    assert "clear-model-cache" not in after["actions"]
    assert after["operation"]["phase"] == "Succeeded"


def test_a_stale_id_is_rejected_and_nothing_is_deleted(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, CACHES)
    world.published()
    clear(world, planId="0" * 64)
    world.tick()
    assert status(world)["phase"] == "Rejected"
    assert "changed since they were reviewed" in status(world)["message"]
    assert len(entries_left(world)) == len(ENTRIES)


def test_a_replaced_cache_directory_makes_the_reviewed_id_stale(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, CACHES)
    reviewed = world.published()["modelCache"]["id"]
    hub = world.root / "root/.cache/huggingface/hub"
    os.rename(hub, hub.with_name("hub.old"))
    hub.mkdir()
    (hub / "models--new").mkdir()
    clear(world, planId=reviewed)
    world.tick()
    assert status(world)["phase"] == "Rejected"
    assert (hub / "models--new").is_dir()


def test_an_empty_cache_is_rejected_as_already_empty(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, READY)
    report = world.published()
    cache = report["modelCache"]
    assert cache["supported"] is True and cache["reclaimableBytes"] == 0
    assert "clear-model-cache" not in report["actions"]
    clear(world)
    world.tick()
    assert status(world)["phase"] == "Rejected"
    assert "already empty" in status(world)["message"]


@pytest.mark.parametrize("flags", [{"allowExperimental": True},
                                   {"allowExperimental": True, "experimentMode": True}])
def test_experimental_flags_are_refused(tmp_path: Path, kube: Any, flags: dict[str, Any]) -> None:
    """The CRD refuses them at admission; the worker's own check (tests/model_cache/
    test_operation.py) would reject them too."""
    from kubernetes.client.exceptions import ApiException

    world = World(tmp_path, kube, CACHES)
    world.published()
    with pytest.raises(ApiException) as refused:
        clear(world, **flags)
    assert refused.value.status == 422
    world.tick()
    assert world.hostop() is None and len(entries_left(world)) == len(ENTRIES)


def test_a_model_starting_between_two_entries_keeps_the_rest(
    tmp_path: Path, kube: Any, ns: str
) -> None:
    world = World(tmp_path, kube, CACHES)
    world.published()
    clear(world)
    for _ in range(10):
        world.tick()
        op = world.state().operation
        assert op is not None and not op.terminal
        if op.to_json()["data"]["deleted"] == 1:
            break
    assert len(entries_left(world)) == len(ENTRIES) - 1
    pod(kube, ns, "starting", labels={"app": "model"})  # pending: not scheduled yet
    assert world.drive() == "Failed"
    op = world.state().operation
    assert op is not None and op.message.startswith(MODEL_STARTED)
    assert f"model Pod {ns}/starting" in op.message
    assert len(entries_left(world)) == len(ENTRIES) - 1  # the rest was kept
    assert_survivors(world)
    assert status(world)["phase"] == "Failed"


def test_symlinks_inside_the_cache_are_unlinked_never_followed(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, "strix-halo-ubuntu-26.04-model-cache-symlink-inside")
    hostname = (world.root / "etc/hostname").read_text()
    assert "clear-model-cache" in world.published()["actions"]
    clear(world)
    assert world.drive() == "Succeeded"
    hub = world.root / "root/.cache/huggingface/hub"
    assert not (hub / "models--linked").is_symlink()  # the link is gone ...
    assert (world.root / "srv/precious/weights.bin").is_file()  # ... what it named is not
    assert (world.root / "etc/hostname").read_text() == hostname
    assert not (hub / "models--Qwen--Qwen3-8B").exists()
    assert (hub / "token").is_file()


@pytest.mark.parametrize(("scenario", "needle"), [
    ("strix-halo-ubuntu-26.04-model-cache-symlinked-root", "is a symbolic link"),
    ("strix-halo-ubuntu-26.04-model-cache-nested-mount", "separate filesystem is mounted"),
])
def test_a_hostile_cache_is_not_offered_and_not_cleared(
    tmp_path: Path, kube: Any, scenario: str, needle: str
) -> None:
    world = World(tmp_path, kube, scenario)
    report = world.published()
    cache = report["modelCache"]
    assert cache["supported"] is False and cache["reclaimableBytes"] == 0
    assert needle in cache["message"]
    assert "clear-model-cache" not in report["actions"]
    before = snapshot(world.root)
    clear(world)
    world.tick()
    assert status(world)["phase"] == "Rejected"
    assert snapshot(world.root) == before
