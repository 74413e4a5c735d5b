"""A prepare-gpu operation of the original worker, as this worker's record (contract.md,
"Upgrading from the original worker"): what its plan and its `activationBefore` say."""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.legacy_values import nonempty_str, plan_of, typed
from magicstick_host.domain.operations.prepare_gpu.data import (
    ModuleIdentity,
    PrepareData,
    module_identity,
)

if TYPE_CHECKING:
    from typing import Any

UNKNOWN = "unknown"


def _module_identity(before: Any) -> ModuleIdentity | str | None:
    """The identity of the ModuleActivation the original recorded before its handoff: a full
    object or `{uid, spec}`; None when there was none; "unknown" for anything else."""
    if before is None:
        return None
    meta = before.get("metadata", before)
    if not isinstance(meta, dict) or not nonempty_str(meta.get("uid")) or "spec" not in before:
        return UNKNOWN
    return module_identity({"metadata": {"uid": meta["uid"]}, "spec": before["spec"]})


def legacy_data(current: dict[str, Any]) -> tuple[PrepareData, list[str]]:
    plan = plan_of(current)
    unknown = ["osVersionId"]  # the original recorded no host evidence

    def from_plan(key: str, *kinds: type) -> Any:
        if typed(plan.get(key), *kinds):
            return plan[key]
        unknown.append(key)
        return None

    experiment = plan.get("experimentMode") is True
    engine = plan.get("engineValidationAvailable")
    if not typed(engine, bool):
        # only the experiment's handoff reads it; unknown there means "do not activate"
        engine = None if experiment else True
        if engine is None:
            unknown.append("engineValidationAvailable")
    identity = (
        _module_identity(current["activationBefore"]) if "activationBefore" in current else UNKNOWN
    )
    if identity == UNKNOWN:
        unknown.append("moduleIdentity")
    packages = from_plan("packages", dict)
    if packages is not None and not all(isinstance(v, str) for v in packages.values()):
        packages = None
        unknown.append("packages")
    data = PrepareData(
        packages=packages,
        target_kernel=from_plan("targetKernel", str),
        reboot_required=from_plan("rebootRequired", bool),
        gpu_profile=from_plan("gpuProfile", str),
        profile_id=from_plan("profileId", str),
        profile_version=from_plan("profileVersion", str, int),
        os_version_id=None,
        experiment=experiment,
        engine_validation_available=engine,
        module_identity=identity if isinstance(identity, ModuleIdentity) else None,
        install_done=True,  # every phase that continues comes after the package step
    )
    return data, unknown
