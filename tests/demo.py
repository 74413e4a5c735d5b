"""`make demo`: a reboot request through the real tick, on a simulated Strix Halo host, against
the real test kube-apiserver. Every step prints what the administrator and the dashboard see.

    python -m tests.demo DIR
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from magicstick_host.ports.kube import hostoperation_name
from magicstick_host.sim.writer import create_host, load_host
from tests.kubeserver import build
from tests.kubeserver.fixtures import KubeCluster
from tests.kubeserver.harness import KubeServer

SCENARIO = "strix-halo-ubuntu-26.04-ready"
NODE = "strix-demo"
EXE = str(Path(sys.executable).parent / "magicstick-host")


def banner(text: str) -> None:
    print(f"\n\033[1m== {text}\033[0m", flush=True)


def cli(*args: str, check: bool = True) -> str:
    proc = subprocess.run([EXE, *args], capture_output=True, text=True, check=False)
    out = (proc.stdout + proc.stderr).rstrip()
    print(textwrap.indent(f"$ magicstick-host {' '.join(args)}\n{out}", "  "), flush=True)
    if check and proc.returncode not in (0, 75, 76):
        raise SystemExit(f"magicstick-host {args[0]} exited {proc.returncode}")
    return proc.stdout


def show_request(cluster: KubeCluster, name: str) -> None:
    _, obj = cluster.request("GET", cluster.hostoperations_path(name))
    status_doc = (obj or {}).get("status") or {}
    print(f"  HostOperation {name}: phase={status_doc.get('phase', 'Pending')!s}")
    if status_doc.get("message"):
        print(textwrap.indent(textwrap.fill(status_doc["message"], 90), "    "))


def main(argv: list[str]) -> int:
    work = Path(argv[0] if argv else ".demo").resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    root, state = work / "host", work / "state"

    banner("building (or reusing) the test kube-apiserver")
    build.ensure_binary()
    with KubeServer(work / "apiserver") as server:
        cluster = KubeCluster(server)
        print(f"  kube-apiserver {build.KUBE_VERSION} at {server.url}, "
              f"ready in {server.start_seconds:.1f} s")

        banner(f"a simulated host: {SCENARIO}")
        create_host(SCENARIO, root)
        host = load_host(root)
        cli("inspect", "--root", str(root))

        banner("the kubelet registers the Node; the worker publishes its first report")
        node = cluster.create_node(NODE, boot_id=host.boot_id, kernel=host.kernel.release)
        uid = node["metadata"]["uid"]
        tick = ["tick", "--root", str(root), "--executor", "sim", "--state-dir", str(state),
                "--kubeconfig", str(server.kubeconfig("worker")), "--node-name", NODE]
        cli(*tick)
        report = json.loads(cluster.read_node(NODE)["metadata"]["annotations"]
                            ["appliance.magicstick.dev/host-management"])
        print(f"  report: plan {report['plan']['state']}, actions {report['actions']}")

        banner("the dashboard user asks for a restart")
        name = hostoperation_name(uid)
        spec = {
            "action": "reboot", "nodeName": NODE, "nodeUid": uid, "bootId": host.boot_id,
            "requestId": secrets.token_hex(16), "acknowledgeDisruption": True,
            "allowExperimental": False, "experimentMode": False,
            "actorHash": hashlib.sha256(b"admin").hexdigest(), "planId": "",
        }
        cluster.create_hostoperation(name, spec)
        show_request(cluster, name)

        banner("tick: intake, then the one shutdown")
        cli(*tick)
        show_request(cluster, name)
        cli("status", "--state-dir", str(state), "--node-name", NODE)

        banner("the host restarts (sim boot) and the kubelet reports the new boot")
        cli("sim", "boot", str(root))
        new_boot = load_host(root).boot_id
        cluster.set_node_info(NODE, boot_id=new_boot, kernel=load_host(root).kernel.release)
        print(f"  new boot ID {new_boot}")

        banner("tick: the new boot is observed")
        cli(*tick)
        show_request(cluster, name)
        cli("status", "--state-dir", str(state), "--node-name", NODE)
        _, obj = cluster.request("GET", cluster.hostoperations_path(name))
        phase = obj["status"]["phase"]
        banner(f"done: {phase}")
        return 0 if phase == "Succeeded" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
