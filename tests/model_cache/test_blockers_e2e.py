"""Every blocker of clear-model-cache, end to end (issue 12, "Done when"): the object is made
on the real test apiserver as the appliance's controllers would make it, the report shows the
cleanup blocked and offers nothing, and a request for it is Rejected with nothing deleted.
The look-alikes that must not block (another node, disabled, remote, unrelated paths) leave
the cleanup offered."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from magicstick_host.domain.model_cache.capability import BLOCKED_MESSAGE
from tests.harness.world import World
from tests.kubeserver.fixtures import KubeCluster
from tests.model_cache.cluster import (
    PODS,
    activation,
    kubeai_model,
    pod,
    pod_body,
    terminating_pod,
)
from tests.model_cache.e2e import CACHES, clear, fresh_cluster, ns, snapshot, status

pytestmark = [pytest.mark.apiserver, pytest.mark.usefixtures("fresh_cluster")]
__all__ = ["fresh_cluster", "ns"]  # the fixtures

Make = Callable[[World, KubeCluster, str], object]  # makes the object(s)
MODEL = {"app": "model"}
FREETOKEN = {"app.kubernetes.io/name": "freetoken"}


def host_path(path: str) -> Make:
    return lambda w, k, ns: pod(k, ns, "mounts", node=w.node_name, host_path=path)


def pinned(to: Callable[[World], str]) -> Make:
    return lambda w, k, ns: activation(
        k, ns, "qwen", {"local": {"freetoken": {"gpuDevice": f"node:{to(w)}"}}})


def symlinked_host_path(w: World, k: KubeCluster, ns: str) -> None:
    """/data/models on this host is a symlink to the Ollama cache: the kubelet follows it."""
    (w.root / "data").mkdir()
    os.symlink("../root/.ollama/models", w.root / "data/models")
    pod(k, ns, "mounts", node=w.node_name, host_path="/data/models")


BLOCKING: dict[str, Make] = {
    "enabled-local-activation": lambda w, k, ns: activation(
        k, ns, "qwen", {"enabled": True, "type": "local"}),
    "activation-with-defaults": lambda w, k, ns: activation(k, ns, "qwen", {}),
    "activation-pinned-to-this-node": pinned(lambda w: w.node_name),
    "kubeai-model": lambda w, k, ns: kubeai_model(k, ns, "llama"),
    "pending-model-pod": lambda w, k, ns: pod(k, ns, "pending", labels=MODEL),
    "model-pod-on-this-node": lambda w, k, ns: pod(
        k, ns, "serving", node=w.node_name, labels=FREETOKEN),
    "terminating-pod-on-this-node": lambda w, k, ns: terminating_pod(
        k, ns, "stopping", node=w.node_name, labels=FREETOKEN),
    "hostpath-equal-to-a-root": host_path("/root/.cache/huggingface/hub"),
    "hostpath-above-the-roots": host_path("/root"),
    "hostpath-of-slash": host_path("/"),
    "hostpath-inside-a-root": host_path("/root/.ollama/models/blobs"),
    "hostpath-double-slash-root": host_path("//root"),
    "hostpath-not-normalised": host_path("/root/.cache//huggingface/./hub"),
    "hostpath-symlink-to-a-root": symlinked_host_path,
}
NOT_BLOCKING: dict[str, Make] = {
    "activation-pinned-to-another-node": pinned(lambda w: "another-node"),
    "disabled-activation": lambda w, k, ns: activation(
        k, ns, "qwen", {"enabled": False}),
    "remote-activation": lambda w, k, ns: activation(
        k, ns, "qwen", {"type": "remote"}),
    "model-pod-on-another-node": lambda w, k, ns: pod(
        k, ns, "elsewhere", node="another-node", labels=MODEL),
    "unlabelled-pending-pod": lambda w, k, ns: pod(k, ns, "web"),
    "unrelated-hostpath": host_path("/var/lib/data"),
    "hostpath-beside-a-root": host_path("/root/.cache/huggingface/hub-old"),
}


@pytest.mark.parametrize("case", sorted(BLOCKING))
def test_a_blocker_blocks_with_nothing_deleted(
    tmp_path: Path, kube: KubeCluster, ns: str, case: str
) -> None:
    world = World(tmp_path, kube, CACHES)
    BLOCKING[case](world, kube, ns)
    before = snapshot(world.root)
    report = world.published()
    cache = report["modelCache"]
    assert cache["blocked"] is True and cache["supported"] is True, cache
    assert cache["message"] == BLOCKED_MESSAGE
    assert cache["reclaimableBytes"] > 0  # what could be cleared, once nothing blocks
    assert "clear-model-cache" not in report["actions"]
    clear(world)
    world.tick()
    rejected = status(world)
    assert rejected["phase"] == "Rejected", rejected
    assert rejected["message"].startswith(BLOCKED_MESSAGE) and "Nothing was deleted" in \
        rejected["message"]
    assert snapshot(world.root) == before


@pytest.mark.parametrize("case", sorted(NOT_BLOCKING))
def test_a_look_alike_does_not_block(
    tmp_path: Path, kube: KubeCluster, ns: str, case: str
) -> None:
    world = World(tmp_path, kube, CACHES)
    NOT_BLOCKING[case](world, kube, ns)
    report = world.published()
    assert report["modelCache"]["blocked"] is False, report["modelCache"]
    assert "clear-model-cache" in report["actions"]


def test_a_hostpath_with_dot_dot_cannot_exist(kube: KubeCluster, ns: str) -> None:
    """The apiserver refuses `..` in a hostPath, so no such Pod can be running; the worker
    judges one conservatively anyway (tests/model_cache/test_blockers.py)."""
    code, out = kube.request("POST", PODS.format(ns=ns),
                             pod_body("dots", host_path="/root/.ollama/x/../models"))
    assert code == 422 and "must not contain '..'" in out["message"]


def test_workloads_that_cannot_be_read_block_and_withdraw_the_capability(
    tmp_path: Path, kube: KubeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An API error is "cannot tell": not supported, nothing offered, a request Rejected."""
    from magicstick_host.collect import model_workloads

    world = World(tmp_path, kube, CACHES)
    # a resource the test worker may not list: 403, as a broken RBAC would answer
    monkeypatch.setattr(model_workloads, "KUBEAI_MODELS", "forbiddenmodels")
    report = world.published()
    cache = report["modelCache"]
    assert cache["supported"] is False and cache["blocked"] is True
    assert "cannot be read from Kubernetes" in cache["message"]
    assert "clear-model-cache" not in report["actions"]
    before = snapshot(world.root)
    clear(world)
    world.tick()
    assert status(world)["phase"] == "Rejected"
    assert snapshot(world.root) == before


def test_the_report_reads_the_workloads_at_its_own_cadence(
    tmp_path: Path, kube: KubeCluster, ns: str
) -> None:
    """Not every tick: a blocker made just after a read shows once the report's interval has
    passed (a request is always checked against a fresh read, above)."""
    world = World(tmp_path, kube, CACHES)
    assert world.published()["modelCache"]["blocked"] is False
    pod(kube, ns, "pending", labels=MODEL)
    world.tick()  # 15 s later: the last read still stands
    assert (world.report() or {})["modelCache"]["blocked"] is False
    for _ in range(4):  # past the report's 60 s
        world.tick()
    assert (world.report() or {})["modelCache"]["blocked"] is True
