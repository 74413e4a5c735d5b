"""`make bench`: wall and CPU time of inspect and of a tick, medians of repeated runs.

Performance is measured here, never asserted in timed tests. Each run is a fresh process, as
the systemd timer starts it, so import time counts.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from magicstick_host.sim.writer import create_host, load_host
from tests.kubeserver import build
from tests.kubeserver.fixtures import KubeCluster
from tests.kubeserver.harness import KubeServer

EXE = str(Path(sys.executable).parent / "magicstick-host")
RUNS = int(os.environ.get("BENCH_RUNS", "9"))


def timed(argv: list[str]) -> tuple[float, float, int]:
    """(wall s, cpu s, peak RSS KiB) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 75, 76):
        raise SystemExit(f"{argv[1]} exited {proc.returncode}: {proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss


def report(label: str, samples: list[tuple[float, float, int]]) -> None:
    walls = [s[0] for s in samples]
    cpus = [s[1] for s in samples]
    print(f"{label:<34} wall median {statistics.median(walls) * 1000:7.0f} ms "
          f"(min {min(walls) * 1000:.0f}, max {max(walls) * 1000:.0f})   "
          f"cpu median {statistics.median(cpus) * 1000:7.0f} ms   n={len(samples)}")


def api_requests_per_operation(work: Path, cluster: KubeCluster) -> None:
    """Kubernetes requests the worker makes for one whole operation, and ticks it takes."""
    from collections import Counter

    from tests.harness.world import World

    cases = {
        "reboot": ("strix-halo-ubuntu-26.04-ready", lambda w: w.create_request("reboot")),
        "prepare-gpu": ("strix-halo-ubuntu-26.04-old-kernel", lambda w: w.create_request(
            "prepare-gpu", planId=w.published()["plan"]["id"], allowExperimental=True)),
        "configure-gpu-memory": ("strix-halo-ubuntu-26.04-ready", lambda w: w.create_request(
            "configure-gpu-memory", planId=w.published()["gpuMemory"]["id"],
            allowExperimental=True, gpuMemory={"carveoutIndex": 9, "dynamicLimitMi": 65536})),
    }
    for action, (scenario, make_request) in cases.items():
        cluster.request("DELETE", "/apis/appliance.magicstick.dev/v1alpha1/namespaces/"
                        "ai-system/moduleactivations/amd-gpu")
        world = World(work / f"ops-{action}", cluster, scenario)
        world.published()
        make_request(world)
        calls: Counter[str] = Counter()

        def counting(method: str, path: str, *a: Any, calls: Counter[str] = calls,
                     real: Any = world.worker._request, **kw: Any) -> Any:
            calls[method] += 1
            return real(method, path, *a, **kw)

        world.worker._request = counting  # type: ignore[method-assign]
        phase = world.drive()
        total = sum(calls.values())
        print(f"{'API requests: ' + action:<34} {total:4d} ({dict(sorted(calls.items()))}) "
              f"-> {phase}, {len(world.effects('shutdown'))} shutdown(s), "
              f"{len(world.playbooks())} playbook run(s)")


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="magicstick-bench-"))
    root = work / "host"
    create_host("strix-halo-ubuntu-26.04-ready", root)
    report("inspect --json (simulated host)",
           [timed([EXE, "inspect", "--json", "--root", str(root)]) for _ in range(RUNS)])
    report("inspect --json (this machine)",
           [timed([EXE, "inspect", "--json"]) for _ in range(RUNS)])

    build.ensure_binary()
    with KubeServer(work / "apiserver") as server:
        cluster = KubeCluster(server)
        host = load_host(root)
        cluster.create_node("bench", boot_id=host.boot_id, kernel=host.kernel.release)
        tick = [EXE, "tick", "--root", str(root), "--executor", "sim", "--state-dir",
                str(work / "state"), "--kubeconfig", str(server.kubeconfig("worker")),
                "--node-name", "bench"]
        publishing: list[tuple[float, float, int]] = []
        idle: list[tuple[float, float, int]] = []
        for _ in range(RUNS):
            # forget the last write, so this tick must publish (as after a content change)
            state = work / "state" / "state.json"
            if state.exists():
                doc = json.loads(state.read_text())
                doc["lastReportDigest"] = ""
                state.write_text(json.dumps(doc))
                os.chmod(state, 0o600)
            publishing.append(timed(tick))
            idle.append(timed(tick))
        report("tick that publishes the report", publishing)
        report("idle tick (nothing to write)", idle)
        peak = max(s[2] for s in publishing + idle)
        print(f"{'tick peak RSS':<34} {peak / 1024:.1f} MiB")
        api_requests_per_operation(work, cluster)
    return 0


if __name__ == "__main__":
    sys.exit(main())
