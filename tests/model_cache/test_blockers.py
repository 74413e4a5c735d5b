"""The blockers as pure functions of the cluster's objects (model-cache.md, "Blockers")."""

from __future__ import annotations

import posixpath
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magicstick_host.domain.model_cache.blockers import (
    Workloads,
    activation_blocks,
    find_blockers,
    model_pod_blocks,
    overlaps,
)
from magicstick_host.domain.model_cache.inventory import CACHE_ROOTS, normalise_path

NODE = "node-a"
HUB = "/root/.cache/huggingface/hub"


def activation(spec: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"namespace": "ai-system", "name": "qwen"}}
    if spec is not None:
        obj["spec"] = spec
    return obj


@pytest.mark.parametrize(("spec", "blocks"), [
    (None, True),  # enabled and local by default, unpinned
    ({}, True),
    ({"enabled": True, "type": "local"}, True),
    ({"enabled": False}, False),
    ({"enabled": "false"}, True),  # not a real false: conservatively enabled
    ({"type": "remote"}, False),
    ({"type": 3}, True),
    ({"local": {"freetoken": {"gpuDevice": f"node:{NODE}"}}}, True),
    ({"local": {"freetoken": {"gpuDevice": "node:node-b"}}}, False),
    ({"local": {"freetoken": {"gpuDevice": "node:"}}}, True),
    ({"local": {"freetoken": {"gpuDevice": "gpu:0"}}}, True),
    ({"local": {"freetoken": {"gpuDevice": 7}}}, True),
    ({"local": "garbage"}, True),
    ({"enabled": False, "local": {"freetoken": {"gpuDevice": f"node:{NODE}"}}}, False),
    ({"type": "remote", "local": {"freetoken": {"gpuDevice": f"node:{NODE}"}}}, False),
])
def test_activations(spec: dict[str, Any] | None, blocks: bool) -> None:
    assert activation_blocks(activation(spec), NODE) is blocks


def pod(labels: dict[str, str] | None = None, node: Any = None, volumes: Any = None,
        deleting: bool = False, name: str = "p") -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": "ns", "name": name, "labels": labels or {}}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T10:00:00Z"
    spec: dict[str, Any] = {}
    if node is not None:
        spec["nodeName"] = node
    if volumes is not None:
        spec["volumes"] = volumes
    return {"metadata": meta, "spec": spec}


@pytest.mark.parametrize(("p", "blocks"), [
    (pod({"app": "model"}, NODE), True),
    (pod({"app": "model"}), True),  # not scheduled yet
    (pod({"app": "model"}, ""), True),
    (pod({"app.kubernetes.io/name": "freetoken"}, NODE, deleting=True), True),  # terminating
    (pod({"app": "model"}, "node-b"), False),
    (pod({"app": "web"}, NODE), False),
    (pod({}, NODE), False),
])
def test_model_pods(p: dict[str, Any], blocks: bool) -> None:
    assert model_pod_blocks(p, NODE) is blocks


@pytest.mark.parametrize(("path", "hit"), [
    ("/", True), ("/root", True), ("//root", True), ("/root/", True), ("/root/.cache", True),
    (HUB, True), (HUB + "/", True), ("/root/.cache//huggingface/./hub", True),
    (HUB + "/models--x", True), ("/root/.ollama/models/blobs", True),
    ("/root/../root/.ollama", True), ("/srv/../", True), ("/tmp/../../root", True),
    ("relative/path", True), ("", True), (None, True), (7, True),  # cannot be judged
    ("/root2", False), ("/root/.cache/huggingface/hubx", False), ("/var/lib/rancher", False),
    ("/root/.config", False), ("/root/.ollama/id_ed25519", False), ("/srv/models", False),
])
def test_host_path_overlap(path: Any, hit: bool) -> None:
    assert any(overlaps(path, spec.path) for spec in CACHE_ROOTS) is hit


_seg = st.sampled_from(["root", ".cache", "huggingface", "hub", ".ollama", "models", "x",
                        ".", "..", ""])


@given(st.lists(_seg, max_size=8))
def test_normalisation_agrees_with_the_kernels_reading(parts: list[str]) -> None:
    """`//`, `.` and `..` (which cannot climb above `/`) resolve as the kernel resolves them."""
    path = "/" + "/".join(parts)
    stack: list[str] = []
    for part in parts:
        if part in ("", "."):
            continue
        if part == "..":
            if stack:
                stack.pop()
            continue
        stack.append(part)
    assert normalise_path(path) == "/" + "/".join(stack)
    assert normalise_path(path) == posixpath.normpath("/" + path.lstrip("/"))


def test_find_blockers_names_each() -> None:
    workloads = Workloads(
        activations=(activation(), activation({"enabled": False})),
        models=({"metadata": {"namespace": "kubeai", "name": "llama"}},),
        pods=(
            pod({"app": "model"}, NODE, name="m1"),
            pod({}, "node-b", volumes=[{"name": "v", "hostPath": {"path": "//root"}}], name="hp"),
            pod({}, "node-b", volumes=[{"name": "v", "emptyDir": {}}], name="plain"),
            pod({}, NODE, volumes=[{"name": "v", "hostPath": {"path": "/var/log"}}], name="logs"),
        ),
    )
    found = find_blockers(workloads, NODE)
    assert found.found == (
        "ModelActivation ai-system/qwen",
        "KubeAI Model kubeai/llama",
        "model Pod ns/m1",
        "Pod ns/hp (hostPath //root)",
    )
    assert found.blocked and "and 1 more" in found.summary()


def test_missing_crds_mean_none_and_errors_mean_cannot_tell() -> None:
    assert not find_blockers(Workloads(activations=None, models=None), NODE).blocked
    cannot = find_blockers(Workloads(error="GET /api/v1/pods: HTTP 403"), NODE)
    assert cannot.blocked and cannot.error and "cannot be read" in cannot.summary()


def test_a_host_path_is_also_judged_by_where_it_leads(tmp_path: Any) -> None:
    import os

    from magicstick_host.collect.model_workloads import resolve_host_paths
    from magicstick_host.ports.hosttree import RootedHostTree

    (tmp_path / "root/.ollama/models").mkdir(parents=True)
    (tmp_path / "srv").mkdir()
    os.symlink("../root/.ollama", tmp_path / "srv/ollama")
    os.symlink("loop", tmp_path / "srv/loop")
    volumes = [{"name": "a", "hostPath": {"path": "/srv/ollama"}}]
    workloads = Workloads(pods=(
        pod({}, "node-b", volumes=volumes, name="linked"),
        pod({}, "node-b", volumes=[{"name": "b", "hostPath": {"path": "/srv/loop"}}], name="l"),
        pod({}, "node-b", volumes=[{"name": "c", "hostPath": {"path": "/srv"}}], name="srv"),
    ))
    assert find_blockers(workloads, NODE).found == ()  # lexically, none overlaps
    resolved = resolve_host_paths(RootedHostTree(str(tmp_path)), workloads)
    assert resolved["/srv/ollama"] == "/root/.ollama" and resolved["/srv/loop"] == "/"
    assert find_blockers(workloads, NODE, resolved).found == (
        "Pod ns/linked (hostPath /srv/ollama)", "Pod ns/l (hostPath /srv/loop)")
