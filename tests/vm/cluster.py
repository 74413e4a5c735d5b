"""The test apiserver as its admin (tests/vm): the rig registers the Node, reads the report and
waits for the kubelet's word on a boot. The standard library only, as the harness."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import Any

from tests.vm.rigdir import Rig, RigError

REPORT = "appliance.magicstick.dev/host-management"
MEMORY_MIB = 2048


class Cluster:
    """The test apiserver as its admin (the rig registers the Node and reads the report)."""

    def __init__(self, rig: Rig) -> None:
        import yaml

        config = yaml.safe_load(rig.kubeconfig("admin").read_text())
        cluster = config["clusters"][0]["cluster"]
        self.url = cluster["server"]
        self.token = config["users"][0]["user"]["token"]
        self.context = ssl.create_default_context(cafile=cluster["certificate-authority"])

    def request(self, method: str, path: str, body: Any = None,
                content_type: str = "application/json", timeout: float = 10.0) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self.context) as resp:
                raw, status = resp.read(), resp.status
        except urllib.error.HTTPError as err:
            raw, status = err.read(), err.code
        return status, (json.loads(raw) if raw else None)

    def node(self, name: str) -> dict[str, Any] | None:
        try:
            status, body = self.request("GET", f"/api/v1/nodes/{name}")
        except (OSError, ssl.SSLError, ValueError):
            return None
        return body if status == 200 and isinstance(body, dict) else None


def register_node(cluster: Cluster, name: str) -> str:
    """The Node as K3s registers it at its first start; the guest's kubelet stand-in writes
    its boot ID and kernel (tests/vm/guest/usr/local/lib/rig/kubelet.py). Returns its UID."""
    status, body = cluster.request("POST", "/api/v1/nodes", {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"node-role.kubernetes.io/control-plane": "true"}}})
    if status not in (200, 201):
        raise RigError(f"registering Node {name}: HTTP {status}: {str(body)[:300]}")
    info = {"machineID": "0" * 32, "systemUUID": "00000000-0000-0000-0000-000000000000",
            "bootID": "", "kernelVersion": "", "osImage": "Ubuntu 26.04 LTS",
            "containerRuntimeVersion": "containerd://2.1.0-k3s1",
            "kubeletVersion": "v1.36.4+k3s1", "kubeProxyVersion": "",
            "operatingSystem": "linux", "architecture": "amd64"}
    base = {"cpu": "2", "memory": f"{MEMORY_MIB}Mi", "pods": "110"}
    status, body = cluster.request(
        "PATCH", f"/api/v1/nodes/{name}/status",
        {"status": {"nodeInfo": info, "allocatable": base, "capacity": base}},
        content_type="application/merge-patch+json")
    if status != 200:
        raise RigError(f"writing Node {name}'s status: HTTP {status}: {str(body)[:300]}")
    return str(body["metadata"]["uid"])
