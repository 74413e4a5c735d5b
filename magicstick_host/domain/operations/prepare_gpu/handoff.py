"""prepare-gpu's handoff to the runtime: ModuleActivation amd-gpu, never over someone else's
change, after refreshing the operator's GPU evidence (operations.md, prepare-gpu step 5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.cluster import SYSTEM_NAMESPACE
from magicstick_host.domain.decisions import Decision, RunStep, SetPhase, Situation, Wait
from magicstick_host.domain.evidence import GPU_PUBLISHER
from magicstick_host.domain.operations.prepare_gpu.data import data_of, module_identity
from magicstick_host.domain.operations.prepare_gpu.declared import (
    ACTIVATE_MODULE,
    MODULE_ACTIVATION,
    MODULE_NAME,
    REFRESH_EVIDENCE,
)
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.state import Operation
from magicstick_host.lite_dataclasses import replace

if TYPE_CHECKING:
    from typing import Any

__all__ = ["ACTIVATE_MODULE", "MODULE_ACTIVATION", "MODULE_NAME", "REFRESH_EVIDENCE",
           "desired_module_spec", "handoff"]


def desired_module_spec(gpu_profile: str) -> dict[str, Any]:
    return {
        "module": MODULE_NAME,
        "enabled": True,
        "applianceRef": {"name": "local", "namespace": SYSTEM_NAMESPACE},
        "parameters": {
            "compatibilityProfile": gpu_profile,
            "allowExperimental": "true",
            # host preparation never starts an engine test or a model download
            "validationRequest": "",
        },
    }


def handoff(op: Operation, now: Situation) -> Decision:
    data = data_of(op)
    if data.experiment and not data.engine_validation_available:
        return SetPhase(
            Phase.PREPARED_UNVERIFIED,
            "The host is prepared, but with a second AMD GPU in this computer the GPU engine "
            "cannot be validated; the runtime profile was not activated.",
        )
    if not now.cluster.ok:
        return Wait("Waiting for Kubernetes to hand the GPU over to the runtime.")
    current = now.cluster.object(MODULE_ACTIVATION.key)
    if module_identity(current) != data.module_identity:
        return SetPhase(
            Phase.INTERRUPTED,
            f"ModuleActivation {MODULE_NAME} changed since this preparation started; it was not "
            "overwritten. Review the module settings, then prepare again.",
        )
    if now.ev.services.gpu_publisher_present and data.evidence_refresh is None:
        # the operator judges eligibility from this evidence: refresh it for the new boot
        return RunStep(
            step=REFRESH_EVIDENCE,
            inputs={"path": GPU_PUBLISHER, "timeoutSeconds": now.limits.gpu_publisher_timeout_s},
            phase_on_done=op.phase,
            message_on_done="The operator's GPU evidence was refreshed; handing the GPU over.",
            message_on_failure="Refreshing the operator's GPU evidence failed; the handoff goes "
            "on without it.",
            phase_on_failure=op.phase,
            data_on_done=replace(data, evidence_refresh="done"),
            data_on_failure=replace(data, evidence_refresh="failed"),
        )
    resource_version = str((current or {}).get("metadata", {}).get("resourceVersion", ""))
    return RunStep(
        step=ACTIVATE_MODULE,
        inputs={
            "create": current is None,
            "resourceVersion": resource_version,
            "spec": desired_module_spec(str(data.gpu_profile)),
        },
        phase_on_done=Phase.REGISTERING,
        message_on_done="The runtime profile was activated; waiting for the GPU to register."
        + _refresh_note(op),
        message_on_failure="Handing the GPU over to the runtime failed; nothing was overwritten.",
        phase_on_failure=Phase.INTERRUPTED,
    )


def _refresh_note(op: Operation) -> str:
    outcome = data_of(op).evidence_refresh
    if outcome in (None, "done"):
        return ""
    detail = next((s.detail for s in reversed(op.steps) if s.name == REFRESH_EVIDENCE), "")
    return f" The GPU evidence refresh did not complete ({outcome}: {detail})."
