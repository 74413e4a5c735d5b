"""The tick's use of the budgets: its reads have a small share, so the tick goes on soon however
the API stalls, and a running playbook's heartbeat is bounded apart from a spent tick budget."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from magicstick_host.domain.cluster import ClusterView
from magicstick_host.domain.inspection import build_inspection, host_capabilities
from magicstick_host.domain.state import State
from magicstick_host.domain.times import rfc3339
from magicstick_host.errors import ExitCode, KubeTemporaryError
from magicstick_host.ports.kube import RealKube
from magicstick_host.ports.state_store import FileStateStore
from magicstick_host.publish import Publishing, publish_report
from magicstick_host.tick import run_tick
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
    # the tick went on without the API, and its exit code says the API failed it
    assert result.exit_code == ExitCode.KUBE_UNAVAILABLE
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
    ev = deps.gather()
    now = deps.clock.now()
    capabilities = host_capabilities(ev, deps.profiles, deps.limits)
    state = FileStateStore(world.state_dir).load()
    assert state is not None

    def unsaved(state: State, event: str, journal: bool) -> State:
        raise AssertionError(f"a heartbeat saves nothing ({event})")

    publishing = Publishing(
        kube=spent,
        node_name=world.node_name,
        limits=deps.limits,
        cluster=ClusterView(node=kube.read_node(world.node_name)),
        ev=ev,
        now=now,
        inspection=build_inspection(ev, deps.profiles, deps.limits, observed_at=now.wall,
                                    root=deps.root, capabilities=capabilities),
        capabilities=capabilities,
        save=unsaved,
        crash=lambda point: None,
    )
    publish_report(state, publishing, save=False)  # the heartbeat of a playbook

    report = json.loads(kube.read_node(world.node_name)["metadata"]["annotations"][ANNOTATION])
    assert report["observedAt"] == rfc3339(now.wall)
    with pytest.raises(KubeTemporaryError, match="used up"):  # the tick's own report is not
        publish_report(state, publishing, save=True)
