"""pytest plugin: the session-scoped `kube` fixture, a real kube-apiserver for contract tests.

Load it from tests/conftest.py with `from tests.kubeserver.fixtures import *`.

Without a Go toolchain (and no cached binary) the tests that use `kube` fail with the reason,
on every machine: none is ever skipped. Mark such tests `@pytest.mark.apiserver`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kubeserver import build
from tests.kubeserver.harness import NAMESPACE, KubeServer, StartupError

__all__ = ["KubeCluster", "kube"]

GROUP, VERSION = "appliance.magicstick.dev", "v1alpha1"


class KubeCluster:
    """What a test gets: a client per user, their kubeconfigs, and a few admin helpers."""

    def __init__(self, server: KubeServer) -> None:
        from kubernetes import config as _config

        config: Any = _config  # the client's own annotations are partial
        self.server = server
        self.admin_kubeconfig = server.kubeconfig("admin")
        self.dashboard_kubeconfig = server.kubeconfig("dashboard")
        self.worker_kubeconfig = server.kubeconfig("worker")
        # the worker user by client certificate, in the shape of K3s's admin kubeconfig
        self.worker_cert_kubeconfig = server.kubeconfig("worker-cert")
        # K3s's own admin (system:admin in system:masters), same shape
        self.admin_cert_kubeconfig = server.kubeconfig("admin-cert")
        self.admin = config.new_client_from_config(str(self.admin_kubeconfig))
        self.dashboard = config.new_client_from_config(str(self.dashboard_kubeconfig))
        self.worker = config.new_client_from_config(str(self.worker_kubeconfig))
        self.worker_cert = config.new_client_from_config(str(self.worker_cert_kubeconfig))
        self.start_seconds = server.start_seconds

    # -- typed APIs per user ----------------------------------------------------------------

    def _client(self, user: str) -> Any:
        return {"admin": self.admin, "dashboard": self.dashboard, "worker": self.worker,
                "worker-cert": self.worker_cert}[user]

    def custom(self, user: str) -> Any:
        from kubernetes import client

        return client.CustomObjectsApi(self._client(user))

    def core(self, user: str) -> Any:
        from kubernetes import client

        return client.CoreV1Api(self._client(user))

    def admin_custom(self) -> Any:
        return self.custom("admin")

    def dashboard_custom(self) -> Any:
        return self.custom("dashboard")

    def worker_custom(self) -> Any:
        return self.custom("worker")

    # -- raw HTTP as a user: (status, parsed JSON body) -----------------------------------------

    def request(self, method: str, path: str, body: Any = None, user: str = "admin",
                content_type: str = "application/json") -> tuple[int, Any]:
        return self.server.request(method, path, body, user=user, content_type=content_type)

    def _ok(self, method: str, path: str, body: Any = None, user: str = "admin",
            content_type: str = "application/json") -> dict[str, Any]:
        status, out = self.request(method, path, body, user, content_type)
        if not 200 <= status <= 299:
            raise AssertionError(f"{method} {path} as {user}: HTTP {status}: {out!r:.1000}")
        assert isinstance(out, dict)
        return out

    # -- Nodes (as the kubelet would; admin writes status through the status subresource) -----

    def create_node(
        self,
        name: str,
        *,
        boot_id: str,
        kernel: str,
        allocatable: dict[str, str] | None = None,
        labels: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Register a Node and set status.nodeInfo/allocatable; returns the Node (with its UID)."""
        self._ok("POST", "/api/v1/nodes",
                 {"apiVersion": "v1", "kind": "Node",
                  "metadata": {"name": name, "labels": labels or {}}})
        return self.set_node_info(name, boot_id=boot_id, kernel=kernel,
                                  allocatable=allocatable or {})

    register_node = create_node

    def set_node_info(
        self,
        name: str,
        *,
        boot_id: str | None = None,
        kernel: str | None = None,
        allocatable: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        node = self._ok("GET", f"/api/v1/nodes/{name}")
        info = dict((node.get("status") or {}).get("nodeInfo") or {})
        info.setdefault("machineID", "0" * 32)
        info.setdefault("systemUUID", "00000000-0000-0000-0000-000000000000")
        info.setdefault("bootID", "")
        info.setdefault("kernelVersion", "")
        info.setdefault("osImage", "Ubuntu 26.04 LTS")
        info.setdefault("containerRuntimeVersion", "containerd://2.1.0-k3s1")
        info.setdefault("kubeletVersion", "v1.36.4+k3s1")
        info.setdefault("kubeProxyVersion", "")
        info.setdefault("operatingSystem", "linux")
        info.setdefault("architecture", "amd64")
        if boot_id is not None:
            info["bootID"] = boot_id
        if kernel is not None:
            info["kernelVersion"] = kernel
        status: dict[str, Any] = {"nodeInfo": info}
        if allocatable is not None:
            base = {"cpu": "16", "memory": "131072Mi", "pods": "110"}
            status["allocatable"] = {**base, **allocatable}
            status["capacity"] = {**base, **allocatable}
        return self._ok("PATCH", f"/api/v1/nodes/{name}/status", {"status": status},
                        content_type="application/merge-patch+json")

    def read_node(self, name: str) -> dict[str, Any]:
        return self._ok("GET", f"/api/v1/nodes/{name}")

    # -- HostOperations as the dashboard ----------------------------------------------------

    def hostoperations_path(self, name: str | None = None, namespace: str = NAMESPACE) -> str:
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/hostoperations"
        return path if name is None else f"{path}/{name}"

    def create_hostoperation(self, name: str, spec: dict[str, Any],
                             namespace: str = NAMESPACE) -> dict[str, Any]:
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "HostOperation",
                "metadata": {"name": name, "namespace": namespace}, "spec": spec}
        return self._ok("POST", self.hostoperations_path(namespace=namespace), body,
                        user="dashboard")

    def delete_hostoperation(self, name: str, uid: str, namespace: str = NAMESPACE) -> None:
        """Delete as the dashboard does: with a UID precondition."""
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}}
        self._ok("DELETE", self.hostoperations_path(name, namespace), body, user="dashboard")


def apiserver_unavailable(reason: str) -> None:
    """Fail, on every machine: a contract test that did not reach the real apiserver proves
    nothing, so there is no way to skip these tests."""
    pytest.fail(f"the real test apiserver is required but {reason} (it is built from Go "
                "modules: put Go 1.26 or later on the PATH)", pytrace=False)


@pytest.fixture(scope="session")
def kube(request: pytest.FixtureRequest,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    try:
        build.ensure_binary()
    except build.GoMissingError as exc:
        apiserver_unavailable(str(exc))
    except build.BuildError as exc:
        pytest.fail(f"building the test apiserver failed:\n{exc}", pytrace=False)
    server = KubeServer(Path(tmp_path_factory.mktemp("kubeserver")))
    try:
        server.start()
    except StartupError as exc:
        server.stop()
        pytest.fail(f"the test apiserver did not start:\n{exc}", pytrace=False)
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"kube-apiserver {build.KUBE_VERSION} at {server.url}: ready in "
            f"{server.start_seconds:.1f} s, manifests installed in {server.install_seconds:.1f} s"
        )
    try:
        yield KubeCluster(server)
    finally:
        server.stop()
