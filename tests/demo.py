"""`make demo`: the worker's operations through the real tick, on simulated Strix Halo hosts,
against the real test kube-apiserver. Every step prints what the administrator and the
dashboard see.

    python -m tests.demo DIR

1. restart: a reboot request, its one orderly shutdown, the new boot;
2. prepare-gpu: an `available` host gets the reviewed kernel, restarts once, hands the GPU to
   the runtime and registers it;
3. GPU memory: a bigger firmware carve-out and a dynamic limit, across two restarts;
4. network: a DHCP→static change confirmed in time, and a wrong Wi-Fi key rolled back.
5. model cache: a cleanup refused while a model Pod is pending, then done entry by entry, and
   the shared blob store freed of what only the models used.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from magicstick_host.ports.kube import hostoperation_name
from magicstick_host.sim.writer import create_host, load_host
from tests.harness.command import magicstick_command
from tests.harness.world import report_node_eligibility
from tests.kubeserver import build
from tests.kubeserver.fixtures import KubeCluster
from tests.kubeserver.harness import KubeServer

EXE = magicstick_command()
REPORT = "appliance.magicstick.dev/host-management"


def banner(text: str) -> None:
    print(f"\n\033[1m== {text}\033[0m", flush=True)


def cli(*args: str, quiet: bool = False) -> str:
    proc = subprocess.run([EXE, *args], capture_output=True, text=True, check=False)
    out = (proc.stdout + proc.stderr).rstrip()
    if not quiet:
        print(textwrap.indent(f"$ magicstick-host {' '.join(args)}\n{out}", "  "), flush=True)
    if proc.returncode not in (0, 75, 76):
        raise SystemExit(f"magicstick-host {args[0]} exited {proc.returncode}:\n{out}")
    return proc.stdout


class DemoHost:
    """One simulated host, its Node, and the dashboard's view of it."""

    def __init__(self, work: Path, server: KubeServer, cluster: KubeCluster, node: str,
                 scenario: str) -> None:
        self.root, self.state = work / node / "host", work / node / "state"
        self.cluster, self.node = cluster, node
        create_host(scenario, self.root)
        host = load_host(self.root)
        created = cluster.create_node(node, boot_id=host.boot_id, kernel=host.kernel.release)
        self.uid = created["metadata"]["uid"]
        self.name = hostoperation_name(self.uid)
        self.tick_args = ["tick", "--root", str(self.root), "--executor", "sim", "--state-dir",
                          str(self.state), "--kubeconfig", str(server.kubeconfig("worker")),
                          "--node-name", node]

    def tick(self, quiet: bool = False) -> None:
        cli(*self.tick_args, quiet=quiet)

    def report(self) -> dict[str, Any]:
        annotations = self.cluster.read_node(self.node)["metadata"]["annotations"]
        report: dict[str, Any] = json.loads(annotations[REPORT])
        return report

    def request(self, action: str, **spec: Any) -> None:
        body = {
            "action": action, "nodeName": self.node, "nodeUid": self.uid,
            "bootId": load_host(self.root).boot_id, "requestId": secrets.token_hex(16),
            "acknowledgeDisruption": True, "allowExperimental": False, "experimentMode": False,
            "actorHash": hashlib.sha256(b"admin").hexdigest(), "planId": "",
        }
        body.update(spec)
        _, old = self.cluster.request("GET", self.cluster.hostoperations_path(self.name))
        if isinstance(old, dict) and old.get("metadata", {}).get("uid"):
            # the dashboard replaces a finished request: delete with a UID precondition
            self.cluster.delete_hostoperation(self.name, old["metadata"]["uid"])
        self.cluster.create_hostoperation(self.name, body)
        print(f"  dashboard created HostOperation {self.name}: {action} "
              f"{json.dumps(spec, sort_keys=True) if spec else ''}".rstrip())

    def status(self) -> dict[str, Any]:
        _, obj = self.cluster.request("GET", self.cluster.hostoperations_path(self.name))
        return dict((obj or {}).get("status") or {})

    def boot(self) -> None:
        cli("sim", "boot", str(self.root))
        host = load_host(self.root)
        self.cluster.set_node_info(self.node, boot_id=host.boot_id, kernel=host.kernel.release,
                                   allocatable={})

    def drive(self, max_ticks: int = 20) -> str:
        """Tick until the request ends; restart when a shutdown is due; act as the device
        plugin when registration waits for it. Prints each phase change."""
        last = ""
        for _ in range(max_ticks):
            self.tick(quiet=True)
            status = self.status()
            phase = status.get("phase", "Pending")
            if phase != last:
                print(f"  tick -> {phase}: {textwrap.shorten(status.get('message', ''), 110)}")
                last = phase
            if phase in ("Succeeded", "Failed", "Rejected", "Interrupted", "PreparedUnverified"):
                return phase
            if load_host(self.root).shutdown is not None:
                self.boot()
            if phase == "Registering":
                self.cluster.set_node_info(self.node, allocatable={"amd.com/gpu": "1"})
                print("  device plugin: the Node now has allocatable amd.com/gpu: 1")
                report_node_eligibility(self.cluster, {
                    "nodeUid": self.uid, "hostBootId": load_host(self.root).boot_id,
                    "hostFingerprint": hashlib.sha256(self.uid.encode()).hexdigest(),
                    "eligible": True, "hostDriverReady": True, "resourceRegistered": True,
                })
                print("  operator: Appliance local lists the node as eligible and registered")
        return last


def restart_demo(work: Path, server: KubeServer, cluster: KubeCluster) -> str:
    banner("1. restart: a simulated Strix Halo on Ubuntu 26.04, already ready")
    host = DemoHost(work, server, cluster, "strix-ready", "strix-halo-ubuntu-26.04-ready")
    cli("inspect", "--root", str(host.root))
    host.tick()
    report = host.report()
    print(f"  published report: plan {report['plan']['state']}, actions {report['actions']}")
    host.request("reboot")
    host.tick()
    print(f"  HostOperation phase: {host.status()['phase']}: {host.status()['message']}")
    cli("status", "--state-dir", str(host.state), "--node-name", host.node)
    host.boot()
    host.tick()
    cli("status", "--state-dir", str(host.state), "--node-name", host.node)
    return str(host.status()["phase"])


def prepare_demo(work: Path, server: KubeServer, cluster: KubeCluster) -> str:
    banner("2. prepare-gpu: a Strix Halo on Ubuntu 26.04 with an old kernel")
    host = DemoHost(work, server, cluster, "strix-old", "strix-halo-ubuntu-26.04-old-kernel")
    cli("inspect", "--root", str(host.root))
    host.tick(quiet=True)
    plan = host.report()["plan"]
    print(f"  the dashboard reads plan {plan['state']} {plan['packages']} id {plan['id'][:16]}…")
    host.request("prepare-gpu", planId=plan["id"], allowExperimental=True)
    phase = host.drive()
    cli("status", "--state-dir", str(host.state), "--node-name", host.node)
    cli("inspect", "--root", str(host.root))
    return phase


def memory_demo(work: Path, server: KubeServer, cluster: KubeCluster) -> str:
    banner("3. GPU memory: 32 GB firmware carve-out and a 64 GiB dynamic limit")
    host = DemoHost(work, server, cluster, "strix-memory", "strix-halo-ubuntu-26.04-ready")
    host.tick(quiet=True)
    cap = host.report()["gpuMemory"]
    print(f"  the dashboard reads gpuMemory: carve-out {cap['currentCarveoutMi']} MiB, dynamic "
          f"limit {cap['currentDynamicLimitMi']} MiB, Linux {cap['systemMemoryMi']} MiB")
    host.request("configure-gpu-memory", planId=cap["id"], allowExperimental=True,
                 gpuMemory={"carveoutIndex": 9, "dynamicLimitMi": 65536})
    phase = host.drive()
    cli("status", "--state-dir", str(host.state), "--node-name", host.node)
    cap = host.report()["gpuMemory"]
    print(f"  now: carve-out {cap['currentCarveoutMi']} MiB, dynamic limit "
          f"{cap['currentDynamicLimitMi']} MiB, Linux {cap['systemMemoryMi']} MiB")
    return phase


# -- 4. network (network.md): a confirmed change and a rolled-back one ----------------------


def network_request(host: DemoHost, settings: dict[str, Any]) -> str:
    """The dashboard: the request Secret (the settings, with any password), then the
    HostOperation that names it, approved against the published network id."""
    import base64

    from magicstick_host.domain.network.request import (
        NODE_LABEL,
        REQUEST_ID_LABEL,
        SECRET_NAMESPACE,
        SECRET_TYPE,
    )

    network = host.report()["network"]
    request_id = secrets.token_hex(16)
    secret = {"apiVersion": "v1", "kind": "Secret", "immutable": True, "type": SECRET_TYPE,
              "metadata": {"name": f"host-network-{request_id}", "namespace": SECRET_NAMESPACE,
                           "labels": {REQUEST_ID_LABEL: request_id, NODE_LABEL: host.uid}},
              "data": {"settings.json": base64.b64encode(json.dumps(settings).encode()).decode()}}
    code, created = host.cluster.request("POST", f"/api/v1/namespaces/{SECRET_NAMESPACE}/secrets",
                                         secret, user="dashboard")
    assert code == 201, created
    shown = {k: ("***" if k == "password" else v) for k, v in settings.items()}
    print(f"  dashboard created Secret {SECRET_NAMESPACE}/host-network-{request_id[:8]}…: "
          f"{json.dumps(shown)}")
    host.request("configure-network", requestId=request_id, planId=network["id"],
                 networkRef={"name": created["metadata"]["name"],
                             "uid": created["metadata"]["uid"]})
    return request_id


def network_host(work: Path, server: KubeServer, cluster: KubeCluster, node: str,
                 scenario: str, address: str) -> DemoHost:
    host = DemoHost(work, server, cluster, node, scenario)
    cluster.request("PATCH", f"/api/v1/nodes/{node}/status",
                    {"status": {"addresses": [{"type": "InternalIP", "address": address}]}},
                    content_type="application/merge-patch+json")
    host.tick(quiet=True)
    for i in host.report()["network"]["interfaces"]:
        print(f"  {i['name']:<7} {i['kind']:<8} {i['configuredMode']:<6} "
              f"{','.join(i['addresses']) or '-':<18} cluster {i['clusterAddresses'] or '-'}")
    return host


def until(host: DemoHost, phase: str, max_ticks: int = 8) -> dict[str, Any]:
    for _ in range(max_ticks):
        host.tick(quiet=True)
        status = host.status()
        message = textwrap.shorten(status.get("message", ""), 110)
        print(f"  tick -> {status.get('phase')}: {message}")
        if status.get("phase") == phase:
            return status
    raise SystemExit(f"the network demo never reached {phase}")


def power_loss(host: DemoHost) -> None:
    """The power goes during the trial: at boot the recovery runs before the network starts."""
    from magicstick_host.sim.network import boot_network, start_network
    from magicstick_host.sim.writer import write_host

    cli("sim", "boot", str(host.root))
    sim = load_host(host.root)
    boot_network(sim)
    write_host(sim, host.root)
    cli("network-recovery", "--root", str(host.root), "--executor", "sim", "--state-dir",
        str(host.state))
    sim = load_host(host.root)
    start_network(sim)
    write_host(sim, host.root)
    host.cluster.set_node_info(host.node, boot_id=sim.boot_id, kernel=sim.kernel.release)


def network_demo(work: Path, server: KubeServer, cluster: KubeCluster) -> str:
    banner("4a. network: enp1s0 from DHCP to a static address, confirmed in time")
    host = network_host(work, server, cluster, "strix-net", "network-ethernet-dhcp",
                        "192.168.1.50")
    request_id = network_request(host, {
        "interface": "enp1s0", "mode": "static", "address": "192.168.1.50/24",
        "gateway": "192.168.1.1", "dns": ["192.168.1.1"], "metric": 100})
    status = until(host, "AwaitingConfirmation")
    print(f"  status.confirmationDeadline: {status['confirmationDeadline']}")
    host.cluster.request("PATCH", host.cluster.hostoperations_path(host.name),
                         {"metadata": {"annotations": {
                             "appliance.magicstick.dev/network-confirmed": request_id}}},
                         user="dashboard", content_type="application/merge-patch+json")
    print("  dashboard confirmed: appliance.magicstick.dev/network-confirmed")
    confirmed = until(host, "Succeeded")["phase"]
    print(f"  /etc/netplan now: {sorted(p.name for p in (host.root / 'etc/netplan').iterdir())}")

    banner("4b. network: a wrong Wi-Fi key on the cluster's Wi-Fi, and a power cut before "
           "anyone confirms")
    wifi = network_host(work, server, cluster, "strix-wifi", "network-wifi-cluster",
                        "192.168.1.60")
    before = {p.name: p.read_bytes() for p in (wifi.root / "etc/netplan").iterdir()}
    network_request(wifi, {"interface": "wlp3s0", "mode": "dhcp", "ssid": "Home",
                           "security": "wpa-psk", "password": "not the key at all",
                           "hidden": False, "metric": 600})
    until(wifi, "AwaitingConfirmation")
    wifi.tick(quiet=True)  # the report of the tick after `netplan apply`
    wlp = next(i for i in wifi.report()["network"]["interfaces"] if i["name"] == "wlp3s0")
    print(f"  wlp3s0 now: connected to {wlp.get('connectedSsid') or 'nothing'}, addresses "
          f"{wlp['addresses'] or 'none'}")
    power_loss(wifi)
    rolled_back = until(wifi, "RolledBack")["phase"]
    after = {p.name: p.read_bytes() for p in (wifi.root / "etc/netplan").iterdir()}
    print(f"  /etc/netplan byte for byte as before: {after == before}")
    ok = confirmed == "Succeeded" and rolled_back == "RolledBack" and after == before
    return "Succeeded" if ok else "Failed"
# -- 4. clear-model-cache (issue 12) ------------------------------------------------------------
GIB = 1024**3
HUB = "root/.cache/huggingface/hub"
XET = "root/.cache/huggingface/xet"
DEMO_NS = "demo-models"


def gib(n: int) -> str:
    return f"{n / GIB:.2f} GiB"


def store_summary(store: Path) -> str:
    """The payloads of the shared blob store and their allocated size."""
    payloads = [p for p in store.glob("??/*") if len(p.name) == 64]
    return f"{len(payloads)} payloads, {gib(sum(p.stat().st_blocks * 512 for p in payloads))}"


def model_cache_demo(work: Path, server: KubeServer, cluster: KubeCluster) -> str:
    banner("5. model cache: Hugging Face and Ollama caches; a model that blocks; the cleanup")
    host = DemoHost(work, server, cluster, "strix-cache", "strix-halo-ubuntu-26.04-model-cache")
    # weights of a realistic size (allocated, not written): 2 x 1 GiB of Qwen3-8B shards. As
    # huggingface_hub 1.32+ keeps them: once in the hub's shared blob store, the model's
    # blobs/<etag> only a symlink into it
    store = host.root / HUB / "blobs"
    shards = sorted((host.root / HUB / "models--Qwen--Qwen3-8B/blobs").iterdir())
    weights = [s.resolve() for s in shards if s.is_symlink()]
    for payload in sorted(weights, key=lambda p: p.stat().st_size, reverse=True)[:2]:
        os.chmod(payload, 0o600)  # the library leaves payloads read-only
        with payload.open("r+b") as f:
            os.posix_fallocate(f.fileno(), 0, GIB)
        os.chmod(payload, 0o400)
    print(f"  shared blob store {HUB}/blobs: {store_summary(store)}")
    host.tick(quiet=True)
    cache = host.report()["modelCache"]
    for c in cache["caches"]:
        print(f"  {c['name']}: {gib(c['usedBytes'])} used, clearable {c['clearable']}")
    offered = "clear-model-cache" in host.report()["actions"]
    print(f"  reclaimable {gib(cache['reclaimableBytes'])}; disk {gib(cache['freeBytes'])} free "
          f"of {gib(cache['totalBytes'])}; cleanup offered: {offered}")
    print(f"  message: {cache['message']}")
    cluster.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": DEMO_NS}})
    pods = f"/api/v1/namespaces/{DEMO_NS}/pods"
    cluster.request("POST", pods, {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "qwen3-8b", "labels": {"app": "model"}}, "spec": {"containers": [
            {"name": "vllm", "image": "example.invalid/vllm:1"}]}})
    print(f"  a model Pod {DEMO_NS}/qwen3-8b is pending (not scheduled yet)")
    host.request("clear-model-cache", planId=cache["id"])
    host.tick(quiet=True)
    print(f"  tick -> {host.status()['phase']}: {host.status()['message']}")
    cluster.request("DELETE", f"{pods}/qwen3-8b", {"apiVersion": "v1", "kind": "DeleteOptions",
                                                   "gracePeriodSeconds": 0})
    print("  the model Pod is gone; the dashboard asks again")
    _, old = cluster.request("GET", cluster.hostoperations_path(host.name))
    cluster.delete_hostoperation(host.name, old["metadata"]["uid"])
    host.request("clear-model-cache", planId=cache["id"])
    phase = host.drive()
    left = sorted(p.name for p in (host.root / HUB).iterdir())
    print(f"  left in the Hugging Face hub: {left}")
    print(f"  shared blob store now: {store_summary(store)} (the dataset's one stays)")
    print(f"  Xet chunk cache left: {sorted(os.listdir(host.root / XET))}")
    after = host.report()["modelCache"]
    print(f"  now: reclaimable {gib(after['reclaimableBytes'])}, disk {gib(after['freeBytes'])} "
          f"free; message: {after['message']}")
    cli("status", "--state-dir", str(host.state), "--node-name", host.node)
    return phase
# ------------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    work = Path(argv[0] if argv else ".demo").resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    banner("building (or reusing) the test kube-apiserver")
    build.ensure_binary()
    with KubeServer(work / "apiserver") as server:
        cluster = KubeCluster(server)
        print(f"  kube-apiserver {build.KUBE_VERSION} at {server.url}, "
              f"ready in {server.start_seconds:.1f} s")
        results = {
            "restart": restart_demo(work, server, cluster),
            "prepare-gpu": prepare_demo(work, server, cluster),
            "gpu memory": memory_demo(work, server, cluster),
            "network": network_demo(work, server, cluster),
            "model cache": model_cache_demo(work, server, cluster),
        }
    banner("done: " + ", ".join(f"{k} {v}" for k, v in results.items()))
    return 0 if all(v == "Succeeded" for v in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
