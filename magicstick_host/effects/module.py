"""Hand the GPU to the runtime: create or update ModuleActivation amd-gpu, with preconditions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.errors import KubeError
from magicstick_host.ports.kube import KubePort

if TYPE_CHECKING:
    from typing import Any

NAMESPACE = "ai-system"
NAME = "amd-gpu"


def activate_module(kube: KubePort | None, inputs: dict[str, Any]) -> tuple[bool, str]:
    if kube is None:
        return False, "no Kubernetes client"
    try:
        if inputs["create"]:
            kube.create_module_activation(
                NAMESPACE,
                {
                    "apiVersion": "appliance.magicstick.dev/v1alpha1",
                    "kind": "ModuleActivation",
                    "metadata": {"name": NAME, "namespace": NAMESPACE},
                    "spec": inputs["spec"],
                },
            )
            return True, f"created ModuleActivation {NAME}"
        kube.patch_module_activation(NAMESPACE, NAME, inputs["spec"], inputs["resourceVersion"])
    except KubeError as exc:
        return False, f"ModuleActivation {NAME}: {exc}"
    return True, f"updated ModuleActivation {NAME} (resourceVersion {inputs['resourceVersion']})"
