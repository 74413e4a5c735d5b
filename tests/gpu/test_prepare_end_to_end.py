"""prepare-gpu end to end: the dashboard reads the published plan id, creates the request on the
real apiserver, and ticks plus `sim boot` drive it. Counted from the simulated host's side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from magicstick_host.sim.writer import load_host, write_host
from tests.harness.world import World

pytestmark = pytest.mark.apiserver

OLD_KERNEL = "strix-halo-ubuntu-26.04-old-kernel"
READY = "strix-halo-ubuntu-26.04-ready"
MIXED_NVIDIA = "strix-halo-nvidia-ubuntu-26.04-old-kernel"
MIXED_AMD = "strix-halo-second-amd-ubuntu-26.04-old-kernel"


def prepare(world: World, **overrides: Any) -> dict[str, Any]:
    plan = world.published()["plan"]
    spec: dict[str, Any] = {"planId": plan["id"], "allowExperimental": True}
    spec.update(overrides)
    return world.create_request("prepare-gpu", **spec)


def status(world: World) -> dict[str, Any]:
    obj = world.hostop()
    assert obj is not None
    return dict(obj.get("status") or {})


MODULE = "/apis/appliance.magicstick.dev/v1alpha1/namespaces/ai-system/moduleactivations"


def module_activation(kube: Any) -> dict[str, Any] | None:
    code, body = kube.request("GET", f"{MODULE}/amd-gpu")
    return body if code == 200 else None


def delete_module_activation(kube: Any) -> None:
    kube.request("DELETE", f"{MODULE}/amd-gpu")


@pytest.fixture(autouse=True)
def fresh_module_activation(kube: Any) -> None:
    # ModuleActivation amd-gpu is cluster-wide in effect and shared by every test's node
    delete_module_activation(kube)


def test_available_to_succeeded_with_one_playbook_run_and_one_restart(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, OLD_KERNEL)
    prepare(world)
    phases = []
    for _ in range(20):
        world.tick()
        phases.append(world.phase())
        if load_host(world.root).shutdown is not None:
            world.boot()
        if world.phase() == "Registering":
            world.registered()
        if world.phase() == "Succeeded":
            break
    assert world.phase() == "Succeeded", phases
    assert [p for i, p in enumerate(phases) if i == 0 or phases[i - 1] != p] == [
        "Preparing",
        "RebootScheduled",
        "Verifying",
        "Registering",
        "Succeeded",
    ]
    assert len(world.playbooks("prepare.yml")) == 1
    assert len(world.effects("shutdown")) == 1
    host = load_host(world.root)
    assert host.kernel.release == "7.0.0-31-generic"
    assert host.package("linux-generic").version == "7.0.0-31.31"  # type: ignore[union-attr]
    module = module_activation(kube)
    assert module is not None
    assert module["spec"]["parameters"] == {
        "compatibilityProfile": world.published()["plan"]["gpuProfile"] or "strix-halo-gfx1151",
        "allowExperimental": "true",
        "validationRequest": "",
    }
    final = status(world)
    assert final["rebootsUsed"] == 1 and final["rebootBudget"] == 1


def test_a_ready_host_registers_without_packages_or_restart(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, READY)
    prepare(world)
    assert world.drive() == "Succeeded"
    assert world.playbooks() == [] and world.effects("shutdown") == []
    assert module_activation(kube) is not None


def test_a_stale_plan_id_is_rejected_with_nothing_run(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, OLD_KERNEL)
    prepare(world, planId="e" * 64)
    world.tick()
    assert world.phase() == "Rejected"
    assert "plan id differs" in status(world)["message"]
    assert world.playbooks() == [] and world.effects("shutdown") == []


def test_a_mixed_host_is_rejected_without_experiment_mode(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, MIXED_NVIDIA)
    prepare(world)
    world.tick()
    assert world.phase() == "Rejected"
    assert world.playbooks() == []


def test_the_experiment_runs_on_a_mixed_host_with_experiment_mode(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, MIXED_NVIDIA)
    experiment = world.published()["plan"]["experiment"]
    world.create_request(
        "prepare-gpu", planId=experiment["id"], allowExperimental=True, experimentMode=True
    )
    assert world.drive() == "Succeeded"
    assert len(world.playbooks("prepare.yml")) == 1 and len(world.effects("shutdown")) == 1


def test_a_second_amd_gpu_ends_prepared_unverified(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, MIXED_AMD)
    experiment = world.published()["plan"]["experiment"]
    assert experiment["engineValidationAvailable"] is False
    world.create_request(
        "prepare-gpu", planId=experiment["id"], allowExperimental=True, experimentMode=True
    )
    assert world.drive() == "PreparedUnverified"
    assert module_activation(kube) is None  # never activated without engine validation


def test_the_wrong_kernel_after_the_restart_fails_and_never_restarts_again(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, OLD_KERNEL)
    prepare(world)
    for _ in range(4):
        world.tick()
        if load_host(world.root).shutdown is not None:
            host = load_host(world.root)
            host.boot_kernels.append("7.1.0-2-generic")  # something newer sneaks into /boot
            write_host(host, world.root)
            world.boot()
            break
    assert world.drive() == "Failed"
    assert "previous kernel stays available" in status(world)["message"]
    for _ in range(3):
        world.tick()
    assert len(world.effects("shutdown")) == 1


def test_a_module_activation_changed_by_someone_else_is_not_overwritten(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, READY)
    prepare(world)
    world.tick()  # accepted: the (absent) ModuleActivation identity is recorded
    kube.request(
        "POST",
        "/apis/appliance.magicstick.dev/v1alpha1/namespaces/ai-system/moduleactivations",
        {
            "apiVersion": "appliance.magicstick.dev/v1alpha1",
            "kind": "ModuleActivation",
            "metadata": {"name": "amd-gpu", "namespace": "ai-system"},
            "spec": {
                "module": "amd-gpu",
                "enabled": False,
                "applianceRef": {"name": "local", "namespace": "ai-system"},
                "parameters": {
                    "compatibilityProfile": "someone-else",
                    "allowExperimental": "false",
                    "validationRequest": "",
                },
            },
        },
    )
    assert world.drive() == "Interrupted"
    assert "not overwritten" in status(world)["message"]
    module = module_activation(kube)
    assert module is not None and module["spec"]["enabled"] is False


@pytest.mark.parametrize(
    ("fault", "needle"),
    [
        ("apt-fails", "Install the approved kernel packages"),
        ("package-unavailable", "see "),
    ],
)
def test_a_failed_package_step_names_the_task_and_is_not_retried(
    tmp_path: Path, kube: Any, fault: str, needle: str
) -> None:
    world = World(tmp_path, kube, OLD_KERNEL)
    host = load_host(world.root)
    host.faults.append(fault)
    write_host(host, world.root)
    prepare(world)
    assert world.drive() == "Failed"
    message = status(world)["message"]
    assert needle in message and ".log" in message
    assert world.effects("shutdown") == []
    log = Path(message.split("see ")[-1].split()[0].rstrip(").;"))
    assert log.exists() and (log.stat().st_mode & 0o777) == 0o600


def test_a_driver_that_never_comes_up_fails_verification(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, OLD_KERNEL)
    host = load_host(world.root)
    host.driver_after_boot = "never"
    write_host(host, world.root)
    prepare(world)
    for _ in range(6):
        world.tick()
        if load_host(world.root).shutdown is not None:
            world.boot()
    assert world.phase() == "Verifying"
    world.clock.advance(301)
    world.tick()
    assert world.phase() == "Failed"
    assert "did not become ready" in status(world)["message"]
    assert len(world.effects("shutdown")) == 1


def test_a_crash_in_the_middle_of_the_playbook_is_classified_from_dpkg_and_never_rerun(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, OLD_KERNEL)
    host = load_host(world.root)
    host.faults.append("apt-crash-halfway")
    write_host(host, world.root)
    prepare(world)
    assert world.drive() == "Interrupted"
    message = status(world)["message"]
    assert "package step was interrupted" in message and "linux-generic" in message
    assert len(world.playbooks("prepare.yml")) == 1  # the crashed run, and no second one
    assert world.effects("shutdown") == []
    assert world.state().operation.outcome == "uncertain"  # type: ignore[union-attr]


def with_publisher(world: World, *faults: str) -> None:
    host = load_host(world.root)
    host.gpu_publisher = True
    host.faults.extend(faults)
    write_host(host, world.root)


def test_the_gpu_evidence_publisher_runs_once_just_before_the_handoff(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, READY)
    with_publisher(world)
    prepare(world)
    assert world.drive() == "Succeeded"
    assert [e["effect"] for e in world.effects() if e["effect"] == "gpu-publish"] == [
        "gpu-publish"
    ]
    op = world.state().operation
    assert op is not None
    names = [s.name for s in op.steps]
    assert names.index("refresh-gpu-evidence") == names.index("activate-module") - 1


def test_a_failing_evidence_publisher_is_noted_and_does_not_stop_the_handoff(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, READY)
    with_publisher(world, "gpu-publish-fails")
    prepare(world)
    seen: list[str] = []
    for _ in range(12):
        world.tick()
        seen.append(str(status(world).get("message", "")))
        if world.phase() == "Registering":
            world.registered()
        if world.phase() == "Succeeded":
            break
    assert world.phase() == "Succeeded"
    assert any("evidence refresh did not complete" in m for m in seen), seen
    assert module_activation(kube) is not None


def test_registration_waits_for_the_operator_to_mark_this_boot_eligible(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, READY)
    prepare(world)
    for _ in range(4):
        world.tick()
    assert world.phase() == "Registering"
    world.device_plugin()  # an allocatable GPU alone is not enough where an operator runs
    world.operator(hostBootId="00000000-0000-4000-8000-00000000dead")  # evidence of a past boot
    world.tick()
    assert world.phase() == "Registering"
    assert "another boot" in status(world)["message"]
    world.operator(eligible=False)
    world.tick()
    assert world.phase() == "Registering" and "eligible" in status(world)["message"]
    world.operator()
    world.tick()
    assert world.phase() == "Succeeded"
    assert "operator marks this node eligible" in status(world)["message"]
