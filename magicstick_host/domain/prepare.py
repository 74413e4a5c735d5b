"""prepare-gpu, stage by stage (operations.md). Pure decisions.

Preparing (record the ModuleActivation identity; the reviewed packages, once) → RebootScheduled
(only with the target kernel's files in /boot; budget 1) → the new boot must run the target
kernel → Verifying (driver ready, ≤300 s) → handoff (ModuleActivation, resourceVersion
precondition; never over someone else's change) → Registering (driver ready and an allocatable
amd.com/gpu, ≤900 s, same boot) → Succeeded. A `ready` plan skips packages and restart.
"""

from __future__ import annotations

from typing import Any

from magicstick_host.domain.canonical import sha256_hex
from magicstick_host.domain.decisions import (
    ClassifiedStep,
    Decision,
    RunStep,
    SetPhase,
    Situation,
    Wait,
)
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.intake import Accepted
from magicstick_host.domain.power import (
    classify_shutdown,
    shutdown_step,
    waiting_for_new_boot,
)
from magicstick_host.domain.readiness import amd_host_driver_ready
from magicstick_host.domain.state import Operation

INSTALL_PACKAGES = "install-packages"
ACTIVATE_MODULE = "activate-module"
MODULE_NAME = "amd-gpu"
NAMESPACE = "ai-system"


def module_identity(module: dict[str, Any] | None) -> dict[str, str] | None:
    """uid + spec digest: what "someone else changed the module decision" is measured by."""
    if module is None:
        return None
    return {
        "uid": str(module.get("metadata", {}).get("uid", "")),
        "specDigest": sha256_hex(module.get("spec") or {}),
    }


def desired_module_spec(gpu_profile: str) -> dict[str, Any]:
    return {
        "module": MODULE_NAME,
        "enabled": True,
        "applianceRef": {"name": "local", "namespace": NAMESPACE},
        "parameters": {
            "compatibilityProfile": gpu_profile,
            "allowExperimental": "true",
            # host preparation never starts an engine test or a model download
            "validationRequest": "",
        },
    }


def prepare_initial_data(req: Accepted, now: Situation) -> dict[str, Any]:
    plan = now.plan
    chosen = plan["experiment"] if req.experiment else plan
    return {
        "packages": dict(chosen.get("packages") or {}),
        "targetKernel": chosen.get("targetKernel") or plan.get("targetKernel"),
        "rebootRequired": bool(chosen.get("rebootRequired")),
        "gpuProfile": plan.get("gpuProfile"),
        "profileId": plan.get("profileId"),
        "profileVersion": plan.get("profileVersion"),
        "osVersionId": now.ev.os.version_id,
        "experiment": req.experiment,
        "engineValidationAvailable": bool(chosen.get("engineValidationAvailable", True)),
        "moduleIdentity": module_identity(now.module_activation),
        "installDone": False,
    }


def _strix_ready(ev: Evidence) -> tuple[bool, str]:
    devices = ev.pci.strix_halo
    if len(devices) != 1:
        return False, f"{len(devices)} Strix Halo GPUs are visible (expected one)"
    return amd_host_driver_ready(ev, devices[0])


def _allocatable_gpus(node: dict[str, Any] | None) -> int:
    value = ((node or {}).get("status") or {}).get("allocatable", {}).get("amd.com/gpu", "0")
    try:
        return int(str(value))
    except ValueError:
        return 0


def decide_prepare(op: Operation, now: Situation) -> Decision:
    ev, data = now.ev, op.data
    if ev.boot_id is None:
        return Wait("Waiting: this host's boot ID cannot be read right now.")
    step = op.open_step
    if step is not None:
        if step.name == INSTALL_PACKAGES:
            return classify_install(op, ev)
        if step.name == ACTIVATE_MODULE:
            return classify_activation(op, now)
        return classify_shutdown(op, ev)
    if op.phase == "Accepted":
        return SetPhase("Preparing", "Preparing the host: checking the reviewed plan.")
    if op.phase == "Preparing":
        return _preparing(op, now)
    if op.phase == "RebootScheduled":
        still = waiting_for_new_boot(op, ev, now.boottime, now.limits)
        if still is not None:
            return still
        if ev.kernel.release != data["targetKernel"]:
            return SetPhase(
                "Failed",
                f"After the restart the running kernel is {ev.kernel.release}, not "
                f"{data['targetKernel']}. The previous kernel stays available in the boot menu; "
                "nothing was repeated.",
            )
        return SetPhase("Verifying", f"Running {ev.kernel.release}; waiting for the GPU driver.")
    if op.phase == "Verifying":
        ready, why = _strix_ready(ev)
        if ready:
            return handoff(op, now)
        if now.boottime - op.phase_since_boottime > now.limits.driver_ready_deadline_s:
            return SetPhase(
                "Failed",
                f"The GPU driver did not become ready within "
                f"{int(now.limits.driver_ready_deadline_s)} s: {why}. Nothing was repeated.",
            )
        return Wait(f"Verifying: waiting for the GPU driver ({why}).")
    if op.phase in ("Registering", "Validating"):
        return _registering(op, now)
    return Wait(f"Waiting in phase {op.phase}.")


def _preparing(op: Operation, now: Situation) -> Decision:
    ev, data = now.ev, op.data
    if data["packages"] and not data.get("installDone"):
        pins = ", ".join(f"{k}={v}" for k, v in sorted(data["packages"].items()))
        return RunStep(
            step=INSTALL_PACKAGES,
            inputs={
                "profileId": data["profileId"],
                "osVersionId": data["osVersionId"],
                "packages": data["packages"],
                "targetKernel": data["targetKernel"],
            },
            phase_on_done="Preparing",
            message_on_done=f"Installed {pins}.",
            message_on_failure="Installing the reviewed packages failed; nothing was retried.",
            data_on_done={"installDone": True},
        )
    if data["rebootRequired"]:
        target = data["targetKernel"]
        if target not in ev.packages.boot_kernels:
            return SetPhase(
                "Failed",
                f"/boot/vmlinuz-{target} and /boot/initrd.img-{target} are not both present, so "
                "the computer was not restarted.",
            )
        return shutdown_step("reboot", now.limits, why=f"Restarting into {target}. ")
    ready, why = _strix_ready(ev)
    if not ready:
        return SetPhase("Verifying", f"Waiting for the GPU driver ({why}).")
    return handoff(op, now)


def handoff(op: Operation, now: Situation) -> Decision:
    data = op.data
    if data["experiment"] and not data["engineValidationAvailable"]:
        return SetPhase(
            "PreparedUnverified",
            "The host is prepared, but with a second AMD GPU in this computer the GPU engine "
            "cannot be validated; the runtime profile was not activated.",
        )
    if not now.cluster_ok:
        return Wait("Waiting for Kubernetes to hand the GPU over to the runtime.")
    current = now.module_activation
    if module_identity(current) != data["moduleIdentity"]:
        return SetPhase(
            "Interrupted",
            f"ModuleActivation {MODULE_NAME} changed since this preparation started; it was not "
            "overwritten. Review the module settings, then prepare again.",
        )
    resource_version = str((current or {}).get("metadata", {}).get("resourceVersion", ""))
    return RunStep(
        step=ACTIVATE_MODULE,
        inputs={
            "create": current is None,
            "resourceVersion": resource_version,
            "spec": desired_module_spec(str(data["gpuProfile"])),
        },
        phase_on_done="Registering",
        message_on_done="The runtime profile was activated; waiting for the GPU to register.",
        message_on_failure="Handing the GPU over to the runtime failed; nothing was overwritten.",
        phase_on_failure="Interrupted",
    )


def _registering(op: Operation, now: Situation) -> Decision:
    ev = now.ev
    if ev.boot_id != op.phase_boot_id:
        return SetPhase(
            "Interrupted", "The host restarted during registration; nothing was repeated."
        )
    ready, why = _strix_ready(ev)
    gpus = _allocatable_gpus(now.node) if now.cluster_ok else 0
    if ready and gpus > 0:
        return SetPhase("Succeeded", f"The GPU is ready and registered ({gpus} amd.com/gpu).")
    if now.boottime - op.phase_since_boottime > now.limits.registration_deadline_s:
        missing = why if not ready else "the Node has no allocatable amd.com/gpu"
        return SetPhase(
            "Failed",
            f"The GPU did not register within {int(now.limits.registration_deadline_s)} s: "
            f"{missing}.",
        )
    waiting = why if not ready else "the device plugin to report amd.com/gpu"
    return Wait(f"Registering: waiting for {waiting}.")


def classify_install(op: Operation, ev: Evidence) -> ClassifiedStep:
    """The package step has no outcome: decide from dpkg and /boot. Never install again."""
    data = op.data
    wanted: dict[str, str] = data["packages"]
    have = ev.packages.installed
    wrong = {n: have.get(n, "not installed") for n, v in wanted.items() if have.get(n) != v}
    kernel_ready = data["targetKernel"] in ev.packages.boot_kernels
    if not wrong and kernel_ready and not ev.unknown("packages"):
        return ClassifiedStep(
            "classified-done",
            "dpkg shows every reviewed package at its pinned version and the kernel in /boot",
            SetPhase(
                "Preparing",
                "The reviewed packages are installed.",
                data={"installDone": True},
                outcome="uncertain",
            ),
        )
    found = ", ".join(f"{n} {v}" for n, v in sorted(wrong.items())) or "the kernel not in /boot"
    return ClassifiedStep(
        "unknown",
        f"dpkg shows {found}",
        SetPhase(
            "Interrupted",
            f"The package step was interrupted; dpkg shows {found}. Nothing was re-run and the "
            "computer was not restarted. Check `dpkg --audit` at the console.",
            outcome="uncertain",
        ),
    )


def classify_activation(op: Operation, now: Situation) -> ClassifiedStep | Wait:
    if not now.cluster_ok:
        return Wait("Waiting for Kubernetes to check the runtime handoff.")
    spec = (now.module_activation or {}).get("spec")
    if spec == desired_module_spec(str(op.data["gpuProfile"])):
        return ClassifiedStep(
            "classified-done",
            f"ModuleActivation {MODULE_NAME} holds this profile",
            SetPhase("Registering", "The runtime profile is active; waiting for registration."),
        )
    return ClassifiedStep(
        "unknown",
        f"ModuleActivation {MODULE_NAME} does not hold this profile",
        SetPhase(
            "Interrupted",
            "The worker stopped while handing the GPU to the runtime, and the module settings "
            "do not show the handoff. Nothing was repeated.",
            outcome="uncertain",
        ),
    )

