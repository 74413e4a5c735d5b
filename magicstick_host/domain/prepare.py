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
from magicstick_host.domain.evidence import GPU_PUBLISHER, Evidence
from magicstick_host.domain.intake import Accepted
from magicstick_host.domain.power import (
    classify_shutdown,
    shutdown_step,
    waiting_for_new_boot,
)
from magicstick_host.domain.readiness import amd_host_driver_ready
from magicstick_host.domain.state import Operation

INSTALL_PACKAGES = "install-packages"
REFRESH_EVIDENCE = "refresh-gpu-evidence"
ACTIVATE_MODULE = "activate-module"
MODULE_NAME = "amd-gpu"
NAMESPACE = "ai-system"
APPLIANCE_NAME = "local"
# the legacy Validating phase completes through the same registration checks
REGISTRATION_PHASES = ("Registering", "Validating")


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
        if step.name == REFRESH_EVIDENCE:
            return classify_refresh(op)
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
    if op.phase in REGISTRATION_PHASES:
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
    if now.ev.services.gpu_publisher_present and "evidenceRefresh" not in data:
        # the operator judges eligibility from this evidence: refresh it for the new boot
        return RunStep(
            step=REFRESH_EVIDENCE,
            inputs={"path": GPU_PUBLISHER, "timeoutSeconds": now.limits.gpu_publisher_timeout_s},
            phase_on_done=op.phase,
            message_on_done="The operator's GPU evidence was refreshed; handing the GPU over.",
            message_on_failure="Refreshing the operator's GPU evidence failed; the handoff goes "
            "on without it.",
            phase_on_failure=op.phase,
            data_on_done={"evidenceRefresh": "done"},
            data_on_failure={"evidenceRefresh": "failed"},
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
        message_on_done="The runtime profile was activated; waiting for the GPU to register."
        + _refresh_note(op),
        message_on_failure="Handing the GPU over to the runtime failed; nothing was overwritten.",
        phase_on_failure="Interrupted",
    )


def _refresh_note(op: Operation) -> str:
    outcome = op.data.get("evidenceRefresh")
    if outcome in (None, "done"):
        return ""
    detail = next((s.detail for s in reversed(op.steps) if s.name == REFRESH_EVIDENCE), "")
    return f" The GPU evidence refresh did not complete ({outcome}: {detail})."


def registration_eligibility(now: Situation, node_uid: str, boot_id: str) -> tuple[bool, str]:
    """(eligible, why) from the operator's Appliance status (contract.md, "Appliance").

    Without an Appliance CRD (plain K3s without the operator) nobody judges eligibility:
    (True, "") and the success message says so."""
    if now.appliance_served is False:
        return True, ""
    if now.appliance_served is None:
        return False, "the operator's Appliance status could not be read"
    status = (now.appliance or {}).get("status") or {}
    operators = status.get("hardwareOperators") if isinstance(status, dict) else None
    amd = operators.get(MODULE_NAME) if isinstance(operators, dict) else None
    compatibility = amd.get("compatibility") if isinstance(amd, dict) else None
    nodes = compatibility.get("nodes") if isinstance(compatibility, dict) else None
    entries = [n for n in nodes if isinstance(n, dict)] if isinstance(nodes, list) else []
    entry = next((n for n in entries if n.get("nodeUid") == node_uid), None)
    if entry is None:
        return False, "the operator has not reported this node in Appliance local yet"
    if entry.get("hostBootId") != boot_id:
        return False, "the operator's GPU evidence for this node is from another boot"
    if not isinstance(entry.get("hostFingerprint"), str) or not entry["hostFingerprint"]:
        return False, "the operator's GPU evidence for this node has no hardware fingerprint"
    for key, what in (
        ("eligible", "eligible"),
        ("hostDriverReady", "driver-ready"),
        ("resourceRegistered", "registered"),
    ):
        if entry.get(key) is not True:
            return False, f"the operator does not mark this node {what} yet"
    return True, ""


def _names_profile(module: dict[str, Any] | None, gpu_profile: str) -> bool:
    params = ((module or {}).get("spec") or {}).get("parameters") or {}
    return isinstance(params, dict) and params.get("compatibilityProfile") == gpu_profile


def _registering(op: Operation, now: Situation) -> Decision:
    ev = now.ev
    if ev.boot_id != op.phase_boot_id:
        return SetPhase(
            "Interrupted", "The host restarted during registration; nothing was repeated."
        )
    profile = str(op.data["gpuProfile"])
    if now.cluster_ok and not _names_profile(now.module_activation, profile):
        return SetPhase(
            "Interrupted",
            f"ModuleActivation {MODULE_NAME} no longer names the runtime profile {profile}; "
            "someone changed the module decision during registration. Nothing was overwritten.",
        )
    ready, why = _strix_ready(ev)
    gpus = _allocatable_gpus(now.node) if now.cluster_ok else 0
    node_uid = str(((now.node or {}).get("metadata") or {}).get("uid", ""))
    eligible, not_eligible = (
        registration_eligibility(now, node_uid, ev.boot_id)
        if now.cluster_ok
        else (False, "Kubernetes could not be asked this tick")
    )
    if ready and gpus > 0 and eligible:
        confirmed = (
            "the operator marks this node eligible, driver-ready and registered"
            if now.appliance_served
            else "eligibility was not confirmed by an operator (this cluster has no Appliance "
            "resource)"
        )
        return SetPhase(
            "Succeeded", f"The GPU is ready and registered ({gpus} amd.com/gpu); {confirmed}."
        )
    if not ready:
        missing = why
    elif gpus <= 0:
        missing = "the Node has no allocatable amd.com/gpu"
    else:
        missing = not_eligible
    if now.boottime - op.phase_since_boottime > now.limits.registration_deadline_s:
        return SetPhase(
            "Failed",
            f"The GPU did not register within {int(now.limits.registration_deadline_s)} s: "
            f"{missing}.",
        )
    return Wait(f"Registering: waiting because {missing}.")


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



def classify_refresh(op: Operation) -> ClassifiedStep:
    """The evidence refresh has no outcome. It never stops the handoff, and is not re-run."""
    return ClassifiedStep(
        "unknown",
        "the worker stopped while the GPU evidence publisher ran",
        SetPhase(
            op.phase,
            "The GPU evidence refresh was interrupted; the handoff goes on without it.",
            data={"evidenceRefresh": "interrupted"},
            restart_clock=False,
        ),
    )
