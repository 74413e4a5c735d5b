"""Set up a soak on a running test apiserver: the hosts, their Nodes and fault proxies; run it.

Used by `python -m tests.soak` (its own apiserver) and by tests/soak/test_soak.py (the suite's).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.kubeserver.fixtures import KubeCluster
from tests.kubeserver.harness import KubeServer
from tests.soak.actions import ACTIONS, check_coverage
from tests.soak.counts import Counts, summary
from tests.soak.driver import Operator, SoakSettings, run_soak
from tests.soak.host import SoakHost
from tests.soak.hostile import ensure_namespace
from tests.soak.pki import make_proxy_ca, proxied_kubeconfig, upstream_of
from tests.soak.proxy import FaultProxy

# an old kernel to prepare (26.04), a ready host with model caches (memory, power,
# clear-model-cache), a ready host with a network (configure-network, scan-wifi); with more
# hosts: a mixed NVIDIA host, an old kernel on 24.04, a plain ready host
SCENARIOS = (
    "strix-halo-ubuntu-26.04-old-kernel",
    "strix-halo-ubuntu-26.04-model-cache",
    "network-ethernet-dhcp",
    "strix-halo-nvidia-ubuntu-26.04-ready",
    "strix-halo-ubuntu-24.04-hwe-6.17",
    "strix-halo-ubuntu-26.04-ready",
)
# process start and the local work of a tick on a loaded two-core machine
BOUND_MARGIN_S = 15.0
ASSUMED_BUDGET_S = 30.0  # issue 10: "a few tens of seconds", when the product names none
HARD_LIMIT_EXTRA_S = 45.0
LONG_PATH_HOST = 0  # this host's state directory path is about 2 kB (issue #24)


def tick_bound() -> tuple[float, str]:
    """The bound of one tick: the product's overall Kubernetes deadline plus a margin."""
    from magicstick_host.domain.limits import DEFAULT_LIMITS

    budget = getattr(DEFAULT_LIMITS, "kube_tick_budget_s", None)
    if budget is None:
        return ASSUMED_BUDGET_S + BOUND_MARGIN_S, (
            f"the product has no overall Kubernetes deadline: {ASSUMED_BUDGET_S:.0f} s assumed "
            f"+ {BOUND_MARGIN_S:.0f} s margin")
    return float(budget) + BOUND_MARGIN_S, (
        f"Limits.kube_tick_budget_s {budget:.0f} s + {BOUND_MARGIN_S:.0f} s margin")


def _worker_kubeconfig(server: KubeServer) -> Path:
    """The worker's kubeconfig in K3s's shape (client certificate) where the harness has it."""
    try:
        path = server.kubeconfig("worker-cert")
    except KeyError:
        return server.kubeconfig("worker")
    return path if path.exists() else server.kubeconfig("worker")


def _printer() -> Callable[[str], None]:
    lock = threading.Lock()

    def log(line: str) -> None:
        with lock:
            print(line, flush=True)

    return log


def soak(server: KubeServer, work: Path, *, ticks: int, seed: int, hosts: int = 3,
         log: Callable[[str], None] | None = None,
         stop_after_s: float | None = None) -> tuple[Counts, str]:
    log = log or _printer()
    uncovered = check_coverage()
    if uncovered:  # a soak that leaves out a registered operation would overstate what it shows
        raise SystemExit("tests/soak/actions.py: " + "; ".join(uncovered))
    cluster = KubeCluster(server)
    ca, cert, key = make_proxy_ca(work / "proxy-pki")
    worker_kubeconfig = _worker_kubeconfig(server)
    upstream = upstream_of(worker_kubeconfig, work / "upstream")
    bound_s, bound_note = tick_bound()
    run_id = secrets.token_hex(3)
    models_namespace = f"soak-hostile-{run_id}"  # where hostile KubeAI Models are created
    ensure_namespace(cluster, models_namespace)
    settings = SoakSettings(seed=seed, bound_s=bound_s,
                            hard_limit_s=bound_s + HARD_LIMIT_EXTRA_S, log=log,
                            models_namespace=models_namespace)
    proxies: list[FaultProxy] = []
    soak_hosts: list[SoakHost] = []
    try:
        for i in range(hosts):
            scenario = SCENARIOS[i % len(SCENARIOS)]
            proxy = FaultProxy(upstream, cert, key)
            proxy.start()
            proxies.append(proxy)
            host_dir = work / f"host-{i}"
            kubeconfig = proxied_kubeconfig(worker_kubeconfig, proxy.url, ca,
                                            host_dir / "worker.kubeconfig")
            soak_hosts.append(SoakHost(host_dir, f"host-{i}", f"soak-{i}-{run_id}", scenario,
                                       cluster, proxy, kubeconfig,
                                       long_state_path=i == LONG_PATH_HOST))
        log(f"[soak] seed {seed}, {ticks} ticks on {hosts} hosts "
            f"({', '.join(f'{h.key} {h.name}: {h.scenario}' for h in soak_hosts)}); "
            f"tick bound {bound_s:.0f} s; {soak_hosts[LONG_PATH_HOST % hosts].key}'s state "
            f"directory path {len(str(soak_hosts[LONG_PATH_HOST % hosts].state_dir))} bytes; "
            f"operations {', '.join(a.name for a in ACTIONS)}; "
            f"work in {work}")
        started = time.monotonic()
        counts = run_soak(soak_hosts, ticks, settings, Operator(cluster),
                          stop_after_s=stop_after_s)
        wall = time.monotonic() - started
    finally:
        for proxy in proxies:
            proxy.stop()
        for soak_host in soak_hosts:
            soak_host.close()
    names = [f"{h.key} {h.name} ({h.scenario})" for h in soak_hosts]
    text = summary(counts, seed=seed, hosts=names, wall_s=wall, bound_s=bound_s,
                   bound_note=bound_note, planned=ticks)
    return counts, text
