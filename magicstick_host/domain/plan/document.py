"""The preparation plan as published in the report (contract.md, "The host report": `plan`).

When no profile matched, `profileId`, `profileVersion`, `gpuProfile` and `targetKernel` are ""
(the dashboard reads strings) and `experimental` is false. `profileVersion` is the profile's
version written as a string ("1"). When a profile matched but the plan is blocked, they name
that profile, so the administrator sees which reviewed profile the host would use.

The experiment is a plan of its own for the dashboard: it carries every plan field, so the UI
can offer it, show it and send `allowExperimental` from its `experimental`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.lite_dataclasses import dataclass

if TYPE_CHECKING:
    from typing import Any, Literal

    PlanState = Literal["not-required", "blocked", "ready", "available"]
    ExperimentState = Literal["ready", "available"]


@dataclass(frozen=True)
class Experiment:
    """The bounded experiment-mode alternative to a plan blocked by other display GPUs.

    Always experimental and run only in experiment mode; `ready` when the host driver is
    already ready on a suitable kernel (no packages, no restart), else `available`.
    """

    id: str
    state: ExperimentState
    message: str
    profile_id: str
    profile_version: str
    gpu_profile: str
    engine_validation_available: bool
    packages: tuple[tuple[str, str], ...]
    reboot_required: bool
    target_kernel: str
    display_gpus: tuple[str, ...]

    def content(self) -> dict[str, Any]:
        """Everything but the id: what the id is computed over."""
        return {
            "state": self.state,
            "message": self.message,
            "profileId": self.profile_id,
            "profileVersion": self.profile_version,
            "gpuProfile": self.gpu_profile,
            "experimental": True,
            "experimentMode": True,
            "engineValidationAvailable": self.engine_validation_available,
            "packages": dict(self.packages),
            "rebootRequired": self.reboot_required,
            "targetKernel": self.target_kernel,
            "displayGpus": list(self.display_gpus),
        }

    def to_json(self) -> dict[str, Any]:
        return {**self.content(), "id": self.id}


@dataclass(frozen=True)
class Plan:
    state: PlanState
    message: str
    profile_id: str  # "" when no profile applies
    profile_version: str  # the profile's version as a string, "" when none
    gpu_profile: str  # the operator's runtime profile id, "" when none
    experimental: bool
    packages: tuple[tuple[str, str], ...]  # only the packages that will change
    target_kernel: str  # "" when no profile applies
    reboot_required: bool
    display_gpus: tuple[str, ...]
    id: str
    experiment: Experiment | None = None

    @property
    def package_map(self) -> dict[str, str]:
        return dict(self.packages)

    def content(self) -> dict[str, Any]:
        """Everything but the plan's own id (the experiment is included with its id)."""
        doc: dict[str, Any] = {
            "state": self.state,
            "message": self.message,
            "profileId": self.profile_id,
            "profileVersion": self.profile_version,
            "gpuProfile": self.gpu_profile,
            "experimental": self.experimental,
            "packages": dict(self.packages),
            "targetKernel": self.target_kernel,
            "rebootRequired": self.reboot_required,
            "displayGpus": list(self.display_gpus),
        }
        if self.experiment is not None:
            doc["experiment"] = self.experiment.to_json()
        return doc

    def to_json(self) -> dict[str, Any]:
        return {**self.content(), "id": self.id}
