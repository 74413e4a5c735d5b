"""The tick's use of the budgets: its reads have a small share, so the tick goes on soon however
the API stalls, and a running playbook's heartbeat is bounded apart from a spent tick budget."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from magicstick_host.domain.inspection import build_inspection, rfc3339
from magicstick_host.errors import ExitCode, KubeTemporaryError
from magicstick_host.ports.kube import RealKube
from magicstick_host.ports.state_store import FileStateStore
from magicstick_host.publish import publish_report
from magicstick_host.tick import Cluster, Tick, run_tick
from tests.harness.world import World
from tests.kubeserver.fixtures import KubeCluster
from tests.ports.kube_servers import (
    call_in_thread,
    drips_the_body,
    kubeconfig_for,
    serving,
)

pytestmark = pytest.mark.apiserver

SCENARIO = "strix-halo-ubuntu-26.04-ready"
ANNOTATION = "appliance.magicstick.dev/host-management"


def test_the_reads_of_a_tick_stop_at_their_share_of_the_budget(
    tmp_path: Path, kube: KubeCluster
) -> None:
    world = World(tmp_path, kube, SCENARIO)
    certs = kube.server.ca_file.parent
    with serving(certs, drips_the_body) as server:
        cfg = kubeconfig_for(tmp_path / "drip.kubeconfig", f"https://127.0.0.1:{server.port}",
                             certs / "apiserver.crt")
        deps = world.deps()
        # a call timeout and a tick budget far beyond the test's bound: only the read share
        # (2 s here) can end the reads in time
        deps.kube = RealKube(str(cfg), timeout=600, budget_s=600)
        deps.limits = replace(deps.limits, kube_read_budget_s=2.0)
        results = []
        returned, raised = call_in_thread(lambda: results.append(run_tick(deps)), 60)
    assert returned and raised is None
    (result,) = results
    assert result.exit_code == ExitCode.OK
    assert "kubernetes: GET /api/v1/nodes/" in result.summary


def test_a_heartbeat_is_sent_when_the_tick_budget_is_spent(
    tmp_path: Path, kube: KubeCluster
) -> None:
    world = World(tmp_path, kube, SCENARIO)
    assert world.tick() is not None  # publishes the first report
    world.clock.advance(120)  # the report is due again
    # a tick that has used up its Kubernetes time
    spent = RealKube(str(kube.worker_kubeconfig), timeout=10, budget_s=0)
    with pytest.raises(KubeTemporaryError, match="used up"):
        spent.read_node(world.node_name)

    deps = world.deps()
    deps.kube = spent
    tick = Tick(deps)
    ev = deps.gather()
    now = deps.clock.now()
    tick.inspection = build_inspection(ev, deps.profiles, deps.limits, observed_at=now.wall,
                                       root=deps.root)
    state = FileStateStore(world.state_dir).load()
    assert state is not None
    cluster = Cluster(node=kube.read_node(world.node_name))
    publish_report(tick, state, ev, now, cluster, save=False)  # the heartbeat of a playbook

    report = json.loads(kube.read_node(world.node_name)["metadata"]["annotations"][ANNOTATION])
    assert report["observedAt"] == rfc3339(now.wall)
    with pytest.raises(KubeTemporaryError, match="used up"):  # the tick's own report is not
        publish_report(tick, state, ev, now, cluster, save=True)
