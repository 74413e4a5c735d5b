"""prepare-gpu's last stage: the GPU registers on fresh eligible hardware (contract.md,
"Appliance"; operations.md, prepare-gpu step 6)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.decisions import Decision, SetPhase, Situation, Wait
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.operations.prepare_gpu.data import data_of
from magicstick_host.domain.operations.prepare_gpu.declared import (
    APPLIANCE,
    MODULE_ACTIVATION,
    MODULE_NAME,
)
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.readiness import amd_host_driver_ready
from magicstick_host.domain.state import Operation

if TYPE_CHECKING:
    from typing import Any


def strix_ready(ev: Evidence) -> tuple[bool, str]:
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


def registration_eligibility(now: Situation, node_uid: str, boot_id: str) -> tuple[bool, str]:
    """(eligible, why) from the operator's Appliance status (contract.md, "Appliance").

    Without an Appliance CRD (plain K3s without the operator) nobody judges eligibility:
    (True, "") and the success message says so."""
    served = now.cluster.is_served(APPLIANCE.key)
    if served is False:
        return True, ""
    if served is None:
        return False, "the operator's Appliance status could not be read"
    status = (now.cluster.object(APPLIANCE.key) or {}).get("status") or {}
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


def registering(op: Operation, now: Situation) -> Decision:
    ev = now.ev
    assert ev.boot_id is not None  # decide.py waits without one
    if ev.boot_id != op.phase_boot_id:
        return SetPhase(
            Phase.INTERRUPTED, "The host restarted during registration; nothing was repeated."
        )
    profile = str(data_of(op).gpu_profile)
    cluster = now.cluster
    if cluster.ok and not _names_profile(cluster.object(MODULE_ACTIVATION.key), profile):
        return SetPhase(
            Phase.INTERRUPTED,
            f"ModuleActivation {MODULE_NAME} no longer names the runtime profile {profile}; "
            "someone changed the module decision during registration. Nothing was overwritten.",
        )
    ready, why = strix_ready(ev)
    gpus = _allocatable_gpus(cluster.node) if cluster.ok else 0
    eligible, not_eligible = (
        registration_eligibility(now, cluster.node_uid, ev.boot_id)
        if cluster.ok
        else (False, "Kubernetes could not be asked this tick")
    )
    if ready and gpus > 0 and eligible:
        confirmed = (
            "the operator marks this node eligible, driver-ready and registered"
            if cluster.is_served(APPLIANCE.key)
            else "eligibility was not confirmed by an operator (this cluster has no Appliance "
            "resource)"
        )
        return SetPhase(
            Phase.SUCCEEDED, f"The GPU is ready and registered ({gpus} amd.com/gpu); {confirmed}."
        )
    if not ready:
        missing = why
    elif gpus <= 0:
        missing = "the Node has no allocatable amd.com/gpu"
    else:
        missing = not_eligible
    if now.boottime - op.phase_since_boottime > now.limits.registration_deadline_s:
        return SetPhase(
            Phase.FAILED,
            f"The GPU did not register within {int(now.limits.registration_deadline_s)} s: "
            f"{missing}.",
        )
    return Wait(f"Registering: waiting because {missing}.")
