"""The harness itself: the build cache and lock, and start-up failures that carry the logs."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from tests.kubeserver import build
from tests.kubeserver.fixtures import KubeCluster, apiserver_unavailable
from tests.kubeserver.harness import (
    CLUSTER_NAMESPACES,
    KubeServer,
    StartupError,
    binding_checks,
    collection_path,
    load_manifests,
)

FAKE_GO = """#!/bin/sh
# a stand-in for `go build -o OUT .`: slow, counts its runs
echo run >> "$COUNTER"
sleep 1
while [ "$#" -gt 0 ]; do
  if [ "$1" = "-o" ]; then shift; printf '#!/bin/sh\\n' > "$1"; fi
  shift
done
"""


@pytest.mark.real_commands
def test_concurrent_builds_build_once_and_then_hit_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    go = bindir / "go"
    go.write_text(FAKE_GO)
    go.chmod(go.stat().st_mode | stat.S_IXUSR)
    counter = tmp_path / "runs"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("COUNTER", str(counter))
    monkeypatch.setenv("MAGICSTICK_CACHE_DIR", str(tmp_path / "cache"))
    results: list[Path] = []
    threads = [threading.Thread(target=lambda: results.append(build.ensure_binary()))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.read_text().count("run") == 1
    assert len(set(results)) == 1
    (path,) = set(results)
    assert path == tmp_path / "cache" / "kubeserver" / build.cache_key() / "kubeserver"
    assert os.access(path, os.X_OK)
    assert build.ensure_binary() == path
    assert counter.read_text().count("run") == 1


def test_cache_key_covers_the_sources(tmp_path: Path) -> None:
    for name in build.KEY_FILES:
        (tmp_path / name).write_text(name)
    key = build.cache_key(tmp_path)
    (tmp_path / "go.sum").write_text("changed")
    assert build.cache_key(tmp_path) != key


def test_go_missing_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("MAGICSTICK_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(build.GoMissingError, match="not on PATH"):
        build.ensure_binary()


def test_manifests_are_installed_in_dependency_order() -> None:
    docs = load_manifests(
        [Path(__file__).resolve().parents[2] / "playbooks" / "files" / "manifests"])
    kinds = [d["kind"] for d in docs]
    assert kinds == ["Namespace", "CustomResourceDefinition", "Role", "RoleBinding", "Role",
                     "RoleBinding"]
    paths = [collection_path(d) for d in docs]
    assert paths[0] == "/api/v1/namespaces"
    assert paths[2] == "/apis/rbac.authorization.k8s.io/v1/namespaces/ai-system/roles"
    assert paths[4] == "/apis/rbac.authorization.k8s.io/v1/namespaces/host-management/roles"


@pytest.mark.apiserver
@pytest.mark.real_commands
def test_a_failed_start_carries_both_log_tails(tmp_path: Path) -> None:
    try:
        build.ensure_binary()
    except build.GoMissingError as exc:
        apiserver_unavailable(str(exc))
    server = KubeServer(tmp_path / "srv", extra_args=["--no-such-flag=1"])
    with pytest.raises(StartupError) as info:
        server.start(timeout=60)
    text = str(info.value)
    assert "etcd log tail" in text and "kube-apiserver log tail" in text
    assert "no-such-flag" in text
    assert server.proc is None


def test_rbac_waits_cover_every_binding_for_the_users_it_names() -> None:
    docs = load_manifests([Path(__file__).resolve().parents[2] / "playbooks" / "files"
                           / "manifests", Path(__file__).resolve().parent / "worker-rbac.yaml"])
    bindings = [d for d in docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding")]
    assert bindings
    for binding in bindings:
        assert binding_checks(binding, docs), binding["metadata"]["name"]
    users = {user for b in bindings for user, _ in binding_checks(b, docs)}
    assert users == {"dashboard", "worker", "worker-cert"}
    # a binding to a role that is not among the manifests waits for nothing it cannot see
    foreign = {"kind": "RoleBinding", "metadata": {"name": "x", "namespace": "ai-system"},
               "roleRef": {"kind": "Role", "name": "elsewhere"},
               "subjects": [{"kind": "User", "name": "magicstick-host-worker"}]}
    assert binding_checks(foreign, docs) == []


def test_unknown_users_have_no_kubeconfig(tmp_path: Path) -> None:
    with pytest.raises(KeyError):
        KubeServer(tmp_path).kubeconfig("root")


@pytest.mark.apiserver
def test_the_cluster_namespaces_exist(kube: KubeCluster) -> None:
    for name in CLUSTER_NAMESPACES:
        status, body = kube.request("GET", f"/api/v1/namespaces/{name}")
        assert status == 200, body


def test_a_missing_apiserver_fails_whatever_the_environment_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for env in ({}, {"MAGICSTICK_ALLOW_NO_APISERVER": "1"}, {"CI": "true"}):
        monkeypatch.delenv("MAGICSTICK_ALLOW_NO_APISERVER", raising=False)
        monkeypatch.delenv("CI", raising=False)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        with pytest.raises(pytest.fail.Exception, match="required"):
            apiserver_unavailable("no go")
