"""Stage decisions of prepare-gpu and configure-gpu-memory that the end-to-end runs don't reach."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from magicstick_host.domain.cluster import ClusterView
from magicstick_host.domain.decisions import Decision, RunStep, SetPhase, Situation, Wait
from magicstick_host.domain.evidence import Evidence, PackageInfo
from magicstick_host.domain.limits import DEFAULT_LIMITS
from magicstick_host.domain.operations.configure_gpu_memory import CONFIGURE_GPU_MEMORY
from magicstick_host.domain.operations.configure_gpu_memory.data import memory_identity
from magicstick_host.domain.operations.decide import decide
from magicstick_host.domain.operations.prepare_gpu import PREPARE_GPU
from magicstick_host.domain.operations.prepare_gpu.handoff import desired_module_spec
from magicstick_host.domain.records import record_to_json
from magicstick_host.domain.state import Operation
from tests.domain.builders import TARGET, host, ready_host, strix
from tests.harness.factories import operation

BOOT = "6f1c2d4e-8a9b-4c3d-9e2f-1a2b3c4d5e6f"
OTHER_BOOT = "00000000-0000-4000-8000-000000000001"


def decide_prepare(op: Operation, now: Situation) -> Decision:
    return decide(PREPARE_GPU, op, now)


def decide_memory(op: Operation, now: Situation) -> Decision:
    return decide(CONFIGURE_GPU_MEMORY, op, now)


def op(action: str, phase: str, data: dict[str, Any], **kw: Any) -> Operation:
    return operation(action, phase, boot_id=BOOT, plan_id="b" * 64, data=data, **kw)


ACTIVATED = {"spec": desired_module_spec("strix-halo-gfx1151")}


def at(
    ev: Evidence,
    boottime: float = 110.0,
    node: dict[str, Any] | None = None,
    module: dict[str, Any] | None = ACTIVATED,
    appliance: dict[str, Any] | None = None,
    appliance_served: bool | None = False,
) -> Situation:
    return Situation(
        ev=ev,
        wall=datetime(2026, 11, 30, 12, tzinfo=UTC),
        boottime=boottime,
        limits=DEFAULT_LIMITS,
        cluster=ClusterView(
            node=node,
            objects={"module-activation": module, "appliance": appliance},
            served={} if appliance_served is None else {"appliance": appliance_served},
        ),
    )


PREPARE = {
    "packages": {"linux-generic": "7.0.0-31.31"},
    "targetKernel": TARGET,
    "rebootRequired": True,
    "gpuProfile": "strix-halo-gfx1151",
    "experiment": False,
    "engineValidationAvailable": True,
    "moduleIdentity": None,
    "installDone": True,
    "profileId": "strix-halo-ubuntu-26.04",
    "profileVersion": "1",
    "osVersionId": "26.04",
}
NODE_WITH_GPU = {"status": {"allocatable": {"amd.com/gpu": "1"}}}


def test_no_restart_without_the_target_kernel_files_in_boot() -> None:
    ev = host(boot_kernels=("6.17.0-14-generic",))
    decision = decide_prepare(op("prepare-gpu", "Preparing", PREPARE), at(ev))
    assert isinstance(decision, SetPhase) and decision.phase == "Failed"
    assert f"/boot/vmlinuz-{TARGET}" in decision.message


def test_the_restart_is_scheduled_once_the_kernel_is_in_boot() -> None:
    ev = host(boot_kernels=("6.17.0-14-generic", TARGET))
    decision = decide_prepare(op("prepare-gpu", "Preparing", PREPARE), at(ev))
    assert isinstance(decision, RunStep) and decision.step == "schedule-shutdown"
    assert decision.uses_reboot


def test_the_legacy_validating_phase_completes_through_the_registration_checks() -> None:
    validating = op("prepare-gpu", "Validating", PREPARE)
    assert isinstance(decide_prepare(validating, at(ready_host(), node={})), Wait)
    done = decide_prepare(validating, at(ready_host(), node=NODE_WITH_GPU))
    assert isinstance(done, SetPhase) and done.phase == "Succeeded"


def test_a_new_boot_during_registration_is_interrupted() -> None:
    registering = op("prepare-gpu", "Registering", PREPARE)
    decision = decide_prepare(registering, at(ready_host(boot_id=OTHER_BOOT), node=NODE_WITH_GPU))
    assert isinstance(decision, SetPhase) and decision.phase == "Interrupted"


def test_registration_fails_after_900_s_without_the_device_plugin() -> None:
    registering = op("prepare-gpu", "Registering", PREPARE)
    assert isinstance(decide_prepare(registering, at(ready_host(), 100 + 899, node={})), Wait)
    late = decide_prepare(registering, at(ready_host(), 100 + 901, node={}))
    assert isinstance(late, SetPhase) and late.phase == "Failed"
    assert "amd.com/gpu" in late.message


NODE_UID = "node-uid-1"
READY_NODE = {"metadata": {"uid": NODE_UID}, "status": {"allocatable": {"amd.com/gpu": "1"}}}


def appliance_with(**entry: Any) -> dict[str, Any]:
    node = {
        "nodeUid": NODE_UID,
        "hostBootId": ready_host().boot_id,
        "hostFingerprint": "f" * 64,
        "eligible": True,
        "hostDriverReady": True,
        "resourceRegistered": True,
        **entry,
    }
    return {"status": {"hardwareOperators": {"amd-gpu": {"compatibility": {"nodes": [node]}}}}}


def registering_at(appliance: dict[str, Any] | None, served: bool | None = True) -> Any:
    registering = op("prepare-gpu", "Registering", PREPARE)
    return decide_prepare(
        registering,
        at(ready_host(), node=READY_NODE, appliance=appliance, appliance_served=served),
    )


def test_registration_succeeds_on_fresh_eligible_hardware_and_an_allocatable_gpu() -> None:
    done = registering_at(appliance_with())
    assert isinstance(done, SetPhase) and done.phase == "Succeeded"
    assert "operator marks this node eligible" in done.message


def test_without_an_appliance_crd_the_allocatable_gpu_decides_and_says_so() -> None:
    done = registering_at(None, served=False)
    assert isinstance(done, SetPhase) and done.phase == "Succeeded"
    assert "not confirmed by an operator" in done.message


@pytest.mark.parametrize(
    "entry",
    [
        {"hostBootId": "00000000-0000-4000-8000-00000000dead"},  # stale evidence
        {"hostFingerprint": ""},
        {"eligible": False},
        {"hostDriverReady": False},
        {"resourceRegistered": False},
        {"nodeUid": "another-node"},
        {"eligible": "true"},  # a string is not a yes
    ],
)
def test_registration_waits_until_every_operator_condition_holds(entry: dict[str, Any]) -> None:
    assert isinstance(registering_at(appliance_with(**entry)), Wait)


def test_registration_waits_when_the_appliance_is_missing_or_unreadable() -> None:
    assert isinstance(registering_at(None, served=True), Wait)  # CRD there, object not yet
    assert isinstance(registering_at(appliance_with(), served=None), Wait)  # cannot tell


def test_a_module_activation_that_no_longer_names_the_profile_interrupts() -> None:
    registering = op("prepare-gpu", "Registering", PREPARE)
    other = {"spec": desired_module_spec("some-other-profile")}
    decision = decide_prepare(registering, at(ready_host(), node=READY_NODE, module=other))
    assert isinstance(decision, SetPhase) and decision.phase == "Interrupted"
    gone = decide_prepare(registering, at(ready_host(), node=READY_NODE, module=None))
    assert isinstance(gone, SetPhase) and gone.phase == "Interrupted"


def test_the_handoff_waits_for_kubernetes_instead_of_guessing() -> None:
    preparing = op("prepare-gpu", "Preparing", {**PREPARE, "packages": {}, "rebootRequired": False})
    assert isinstance(decide_prepare(preparing, at(ready_host())), Wait)


MEMORY = {
    "carveoutIndex": 9,
    "dynamicLimitMi": 65536,
    "pciAddress": "0000:c5:00.0",
    "fromCarveoutIndex": 1,
    "options": [],
    "newCarveoutMi": 32768,
    "stage": "carveout",
    "carveoutWritten": True,
    "ttmWritten": False,
}


def memory_op(phase: str, ev: Evidence, **data: Any) -> Operation:
    return op(
        "configure-gpu-memory",
        phase,
        {**MEMORY, "identity": record_to_json(memory_identity(ev)), **data},
        reboot_budget=2,
    )


def test_a_kernel_change_across_the_restart_fails_with_expected_and_found() -> None:
    before = ready_host()
    after = ready_host(release="7.0.0-32-generic", boot_id=OTHER_BOOT)
    decision = decide_memory(memory_op("Verifying", before), at(after))
    assert isinstance(decision, SetPhase) and decision.phase == "Failed"
    assert "expected 7.0.0-31-generic, found 7.0.0-32-generic" in decision.message


def test_a_carveout_that_did_not_take_effect_fails_and_says_so() -> None:
    ev = ready_host(boot_id=OTHER_BOOT, pci=host().pci)
    decision = decide_memory(memory_op("Verifying", ev), at(ev))
    assert isinstance(decision, SetPhase) and decision.phase == "Failed"
    assert "expected 32768 MiB" in decision.message


def test_the_limit_is_authorised_by_the_actual_memtotal_after_the_restart() -> None:
    ev = ready_host(memory=replace(ready_host().memory, mem_total_kib=(65536 + 16383) * 1024))
    decision = decide_memory(memory_op("Preparing", ev, stage="ttm"), at(ev))
    assert isinstance(decision, SetPhase) and decision.phase == "Failed"
    assert "nothing was written" in decision.message


def test_no_new_boot_after_a_firmware_write_says_the_choice_is_pending() -> None:
    ev = ready_host()
    decision = decide_memory(memory_op("RebootScheduled", ev), at(ev, boottime=100 + 601))
    assert isinstance(decision, SetPhase) and decision.phase == "Failed"
    assert "firmware memory choice 9 is pending" in decision.message


def test_the_third_restart_is_never_scheduled() -> None:
    from magicstick_host.domain.decisions import RunStep as Step

    ev = ready_host(packages=PackageInfo())
    decision = decide_memory(memory_op("Preparing", ev, stage="ttm", ttmWritten=True), at(ev))
    assert isinstance(decision, Step) and decision.uses_reboot
    # the tick refuses a reboot step once rebootsUsed reaches the budget (test_tick_budget)
    _ = strix


def test_no_restart_while_the_target_kernel_awaits_its_initramfs() -> None:
    """The install step is done and /boot has the target, but an interrupted trigger run left
    the image awaiting initramfs-tools (issue #25): the computer is not restarted."""
    from magicstick_host.domain.parsers.dpkg_status import Unsettled

    ev = host(boot_kernels=("6.17.0-14-generic", TARGET))
    ev = replace(ev, packages=replace(ev.packages, unsettled=(
        Unsettled("initramfs-tools", "", "install ok triggers-pending"),
        Unsettled(f"linux-image-{TARGET}", "amd64", "install ok triggers-awaited"),
    )))
    decision = decide_prepare(op("prepare-gpu", "Preparing", PREPARE), at(ev))
    assert isinstance(decision, SetPhase) and decision.phase == "Failed"
    assert "`dpkg --configure -a`" in decision.message
