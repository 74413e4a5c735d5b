"""The dashboard's own checks against the report the real tick wrote on the real apiserver, for
every simulated host that offers the action; each resulting request runs to its end.

What the dashboard offers must never be Rejected by the worker: the report and intake agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from magicstick_host import schemas
from magicstick_host.cli.converge_cmd import build_converge_deps
from magicstick_host.converge import run_converge
from magicstick_host.errors import ExitCode
from magicstick_host.sim.scenarios import SCENARIOS
from tests.harness import dashboard
from tests.harness.world import World

pytestmark = [pytest.mark.apiserver, pytest.mark.slow]

MODULE = "/apis/appliance.magicstick.dev/v1alpha1/namespaces/ai-system/moduleactivations/amd-gpu"
# a second AMD GPU: the host is prepared, but its engine cannot be validated
UNVERIFIED = "PreparedUnverified"


def offers(scenario: str, tmp: Path, kube: Any) -> dict[str, Any]:
    return World(tmp, kube, scenario).published()


def world_for(tmp: Path, kube: Any, scenario: str) -> World:
    kube.request("DELETE", MODULE)  # cluster-wide: each run starts from none
    return World(tmp, kube, scenario)


@pytest.fixture(scope="module")
def reports(kube: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The report each simulated host publishes before anyone asks anything."""
    out = {}
    for name in sorted(SCENARIOS):
        out[name] = offers(name, tmp_path_factory.mktemp(name), kube)
    return out


def test_prepare_as_the_dashboard_offers_it(
    tmp_path: Path, kube: Any, reports: dict[str, dict[str, Any]]
) -> None:
    offered = [name for name, r in reports.items() if dashboard.plan_actionable(r)]
    assert offered, "no simulated host offers prepare-gpu"
    for name in offered:
        world = world_for(tmp_path / name, kube, name)
        world.create_request("prepare-gpu", **dashboard.prepare_spec(world.published()))
        assert world.drive() == "Succeeded", (name, world.hostop())


def test_the_experiment_as_the_dashboard_offers_it(
    tmp_path: Path, kube: Any, reports: dict[str, dict[str, Any]]
) -> None:
    offered = [name for name, r in reports.items() if dashboard.experiment_actionable(r)]
    assert offered, "no simulated host offers an experiment"
    for name in offered:
        world = world_for(tmp_path / name, kube, name)
        report = world.published()
        spec = dashboard.prepare_spec(report, experiment=True)
        assert spec["allowExperimental"] is True  # the dashboard takes it from the experiment
        world.create_request("prepare-gpu", **spec)
        validated = report["plan"]["experiment"]["engineValidationAvailable"]
        expected = "Succeeded" if validated else UNVERIFIED
        assert world.drive() == expected, (name, world.hostop())


def test_a_memory_change_as_the_dashboard_offers_it(
    tmp_path: Path, kube: Any, reports: dict[str, dict[str, Any]]
) -> None:
    offered = [name for name, r in reports.items() if r["gpuMemory"]["supported"] is True]
    assert offered, "no simulated host offers configure-gpu-memory"
    for name in offered:
        world = world_for(tmp_path / name, kube, name)
        cap = world.published()["gpuMemory"]
        index, limit = dashboard.a_memory_selection(cap)
        world.create_request("configure-gpu-memory", **dashboard.memory_spec(cap, index, limit))
        assert world.drive() == "Succeeded", (name, world.hostop())


@pytest.mark.parametrize("action", ["reboot", "poweroff"])
def test_power_as_the_dashboard_offers_it(
    tmp_path: Path, kube: Any, reports: dict[str, dict[str, Any]], action: str
) -> None:
    # the dashboard offers power to any fresh host; one of each kind of host is enough
    for name in ("strix-halo-ubuntu-26.04-ready", "cpu-only-ubuntu-24.04"):
        assert action in reports[name]["actions"]
        world = world_for(tmp_path / name, kube, name)
        world.create_request(action)
        assert world.drive() == "Succeeded", (name, world.hostop())


def shown_convergence(report: dict[str, Any]) -> str:
    """What a dashboard that knows the optional `convergence` section shows (convergence.md)."""
    run = report.get("convergence")
    if not isinstance(run, dict):
        return "never converged"
    reboot = ", reboot scheduled" if run["rebootScheduled"] else ""
    return f"{run['result']} at {run['lastRunAt']}: {run['changed']} changed{reboot}"


def offered_actions(report: dict[str, Any]) -> tuple[Any, ...]:
    """What the dashboard offers from a report (the checks above)."""
    return (dashboard.plan_actionable(report), dashboard.experiment_actionable(report),
            report["gpuMemory"]["supported"] is True, tuple(report["actions"]))


def test_the_convergence_run_as_the_dashboard_reads_it(
    tmp_path: Path, kube: Any, reports: dict[str, dict[str, Any]]
) -> None:
    """A converged host reports its last run; an older dashboard, which ignores the section,
    offers the same and its request still runs to its end."""
    offered = [name for name, r in reports.items()
               if dashboard.plan_actionable(r) and "nvidia" in name]
    assert offered, "no simulated NVIDIA display host offers prepare-gpu"
    name = offered[0]
    world = world_for(tmp_path / name, kube, name)
    before = world.published()
    assert shown_convergence(before) == "never converged"
    deps = build_converge_deps(root=str(world.root), state_dir=str(world.state_dir),
                               executor="sim")
    assert run_converge(deps).exit_code == ExitCode.OK
    world.clock.advance(61)  # past the report's minimum interval, the request still fresh
    world.tick()
    report = world.report()
    assert report is not None and schemas.errors("report", report) == []
    run = report["convergence"]
    assert (run["result"], run["changed"], run["rebootScheduled"]) == ("succeeded", 1, False)
    assert shown_convergence(report).startswith("succeeded at ")
    older = {k: v for k, v in report.items() if k != "convergence"}
    assert offered_actions(older) == offered_actions(report) == offered_actions(before)
    world.create_request("prepare-gpu", **dashboard.prepare_spec(report))
    assert world.drive() == "Succeeded", (name, world.hostop())
