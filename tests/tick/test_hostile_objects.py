"""A hostile cluster object (issue #24, N1): a KubeAI Model whose spec nests 2000 levels, which
the real apiserver stores (the CRD keeps unknown fields). It must not end a tick with exit 70
or skip its local step: the object is named by namespace/name and is "cannot tell" for what
depends on it (the model-cache blockers), and everything else goes on."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from magicstick_host.errors import ExitCode, KubeUnreadableError
from magicstick_host.ports.kube import RealKube
from tests.harness.world import World
from tests.kubeserver.fixtures import KubeCluster
from tests.model_cache.cluster import MODELS, drop_namespace, new_namespace
from tests.model_cache.e2e import CACHES, clear, snapshot, status
from tests.model_cache.e2e import fresh_cluster as fresh_cluster
from tests.tick.test_exit_codes import tick_process

pytestmark = [pytest.mark.apiserver, pytest.mark.real_commands]

READY = "strix-halo-ubuntu-26.04-ready"
DEPTH = 2000


def raw(kube: KubeCluster, method: str, path: str, body: bytes | None = None) -> int:
    """One call as admin whose bodies are never decoded here (the test's own client would
    recurse on them as the worker's did)."""
    server = kube.server
    request = urllib.request.Request(server.url + path, data=body, method=method)
    request.add_header("Authorization", f"Bearer {server.tokens['admin']}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30,
                                    context=server._context("admin")) as answer:
            answer.read()
            return int(answer.status)
    except urllib.error.HTTPError as err:
        err.read()
        return int(err.code)


@pytest.fixture
def deep_model(kube: KubeCluster, fresh_cluster: None) -> Iterator[str]:
    """namespace/name of a KubeAI Model nested DEPTH levels, deleted again at the end (every
    tick of every host in the session's apiserver reads it)."""
    ns = new_namespace(kube)
    nested = '{"a":' * DEPTH + "1" + "}" * DEPTH
    body = ('{"apiVersion":"kubeai.org/v1","kind":"Model","metadata":{"name":"deep"},'
            '"spec":{"url":"hf://Qwen/Qwen3-8B","minReplicas":0,"extra":' + nested + "}}")
    assert raw(kube, "POST", MODELS.format(ns=ns), body.encode()) == 201
    try:
        yield f"{ns}/deep"
    finally:
        assert raw(kube, "DELETE", MODELS.format(ns=ns) + "/deep") == 200
        drop_namespace(kube, ns)


def test_a_finished_reboot_still_succeeds_beside_a_model_nested_2000_levels(
    tmp_path: Path, kube: KubeCluster, deep_model: str
) -> None:
    world = World(tmp_path, kube, READY)
    world.create_request("reboot")
    world.tick()
    assert world.phase() == "RebootScheduled"
    world.boot()
    world.clock.advance(120)  # past the report's interval: this tick reads the workloads
    done = tick_process(world, Path(kube.worker_kubeconfig))
    assert "Traceback" not in done.stderr, done.stderr
    # the report's reads met an unreadable object: that is no Kubernetes outage, the tick
    # did all it had to, and the report says what cannot be told
    assert done.returncode == ExitCode.OK, (done.returncode, done.stderr)
    op = world.state().operation
    assert op is not None and op.phase == "Succeeded", op
    assert world.phase() == "Succeeded"
    cache = world.published()["modelCache"]
    assert cache["blocked"] is True and cache["supported"] is False, cache
    assert "clear-model-cache" not in world.published()["actions"]


def test_the_list_names_the_unreadable_model_on_both_transports(
    kube: KubeCluster, deep_model: str
) -> None:
    for transport in ("lean", "official"):
        worker = RealKube(str(kube.worker_kubeconfig), timeout=10, transport=transport)
        with pytest.raises(KubeUnreadableError) as caught:
            worker.list_objects("kubeai.org/v1", "models")
        assert f"{deep_model} (nested deeper than 100 levels)" in str(caught.value), transport


def test_clear_model_cache_never_proceeds_past_a_blocker_it_cannot_read(
    tmp_path: Path, kube: KubeCluster, deep_model: str
) -> None:
    world = World(tmp_path, kube, CACHES)
    world.tick()
    before = snapshot(world.root)
    report = world.published()
    assert "clear-model-cache" not in report["actions"]
    assert report["modelCache"]["blocked"] is True, report["modelCache"]
    # a request for the caches as reviewed, made anyway: Rejected, nothing deleted
    clear(world)
    world.tick()
    rejected = status(world)
    assert rejected["phase"] == "Rejected", rejected
    assert deep_model in rejected["message"], rejected["message"]
    assert snapshot(world.root) == before
