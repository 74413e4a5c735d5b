"""What a prepare-gpu operation records: the reviewed plan it runs and what its steps did."""

from __future__ import annotations

from typing import Any, Literal

from magicstick_host.domain.canonical import sha256_hex
from magicstick_host.domain.decisions import Situation
from magicstick_host.domain.request import Accepted
from magicstick_host.domain.state import Operation
from magicstick_host.lite_dataclasses import dataclass


@dataclass(frozen=True)
class ModuleIdentity:
    """uid + spec digest: what "someone else changed the module decision" is measured by."""

    uid: str
    spec_digest: str


def module_identity(module: dict[str, Any] | None) -> ModuleIdentity | None:
    if module is None:
        return None
    return ModuleIdentity(
        uid=str(module.get("metadata", {}).get("uid", "")),
        spec_digest=sha256_hex(module.get("spec") or {}),
    )


@dataclass(frozen=True)
class PrepareData:
    # None only in an operation migrated from the original worker, which did not record it
    # (domain/legacy_state.py); the phases that continue from there do not read it
    packages: dict[str, str] | None
    target_kernel: str | None
    reboot_required: bool | None
    gpu_profile: str | None
    profile_id: str | None
    profile_version: str | int | None
    os_version_id: str | None
    experiment: bool
    engine_validation_available: bool | None
    # the ModuleActivation when the preparation started (None: there was none)
    module_identity: ModuleIdentity | None
    install_done: bool
    # how the refresh of the operator's GPU evidence went; None: not run (yet)
    evidence_refresh: Literal["done", "failed", "interrupted"] | None = None


def data_of(op: Operation) -> PrepareData:
    assert isinstance(op.data, PrepareData), op.data
    return op.data


def start(req: Accepted, now: Situation) -> PrepareData:
    plan = now.plan
    chosen = plan["experiment"] if req.experiment else plan
    return PrepareData(
        packages=dict(chosen.get("packages") or {}),
        target_kernel=chosen.get("targetKernel") or plan.get("targetKernel"),
        reboot_required=bool(chosen.get("rebootRequired")),
        gpu_profile=plan.get("gpuProfile"),
        profile_id=plan.get("profileId"),
        profile_version=plan.get("profileVersion"),
        os_version_id=now.ev.os.version_id,
        experiment=req.experiment,
        engine_validation_available=bool(chosen.get("engineValidationAvailable", True)),
        module_identity=module_identity(now.cluster.object("module-activation")),
        install_done=False,
    )
