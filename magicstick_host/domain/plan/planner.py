"""The preparation plan: evidence + shipped profiles -> Plan (operations.md, "Plan rules").

Pure: the same evidence and profiles always give the same plan and the same id. Unknown
evidence never yields `available`; it blocks with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from magicstick_host.domain.canonical import sha256_hex
from magicstick_host.domain.evidence import AMD_VENDOR, STRIX_HALO_ID, Evidence
from magicstick_host.domain.fingerprint import host_identity, inventory_unknowns
from magicstick_host.domain.plan.document import Experiment, Plan
from magicstick_host.domain.plan.strix_assessment import Outcome, assess
from magicstick_host.domain.profiles import (
    Profile,
    match_profile,
    package_gate_problems,
    profile_package_names,
)
from magicstick_host.domain.text import clip_message
from magicstick_host.lite_dataclasses import dataclass, replace

if TYPE_CHECKING:
    from typing import Any

    from magicstick_host.domain.plan.document import ExperimentState, PlanState

_PLAN_KIND = "prepare-gpu-plan/1"
_EXPERIMENT_KIND = "prepare-gpu-experiment/1"
# the fixed warning every experiment message starts with (contract.md, `experiment.message`)
EXPERIMENT_WARNING = (
    "WARNING: experiment on a combination of GPUs that no reviewed profile covers. All GPUs of "
    "a computer share one kernel, so this preparation can break the other GPUs' drivers."
)


@dataclass(frozen=True)
class _Draft:
    state: PlanState
    message: str
    profile: Profile | None = None
    outcome: Outcome | None = None  # ready/available: what the plan does
    experiment: Outcome | None = None  # ready/available, offered beside a blocked mixed plan
    engine_validation_available: bool = True


def plan_identity(ev: Evidence, profiles: Sequence[Profile]) -> dict[str, Any]:
    """The host and profile inputs every plan id binds to (contract.md)."""
    installed = ev.packages.installed
    return {
        **host_identity(ev),
        "profilePackages": {n: installed.get(n) for n in profile_package_names(profiles)},
        "profiles": [
            {"id": p.id, "version": p.published_version, "digest": p.digest}
            for p in sorted(profiles, key=lambda p: (p.id, p.version))
        ],
    }


def _os_problem(ev: Evidence) -> str | None:
    for path, value, what in (
        ("os.id", ev.os.id, "the OS ID"),
        ("os.version_id", ev.os.version_id, "the OS VERSION_ID"),
        ("arch", ev.arch, "the architecture"),
    ):
        # an unknown recorded for the whole of /etc/os-release covers both of its fields
        whole_os = tuple(u for u in ev.unknowns if u.field == "os")
        unknown = ev.unknown(path) or (whole_os if path.startswith("os.") else ())
        if unknown or not value:
            why = f" ({unknown[0].reason})" if unknown else ""
            return f"{what} could not be read{why}"
    return None


def _draft(ev: Evidence, profiles: Sequence[Profile]) -> _Draft:
    pci_unknown = inventory_unknowns(ev)
    if not ev.pci.complete or pci_unknown:
        why = f" ({pci_unknown[0].reason})" if pci_unknown else ""
        return _Draft(
            "blocked",
            f"The display device inventory is unreadable or incomplete{why}; preparation is "
            "blocked because GPUs it cannot see could share the kernel.",
        )
    strix = ev.pci.strix_halo
    if not strix:
        found = ", ".join(ev.pci.display_ids) or "none"
        return _Draft(
            "not-required",
            f"No Strix Halo GPU ({STRIX_HALO_ID}) is present (display GPUs: {found}); "
            "NVIDIA, Intel and other AMD GPUs keep their operator path, and this host needs no "
            "Strix Halo preparation.",
        )
    os_problem = _os_problem(ev)
    if os_problem is not None:
        return _Draft(
            "blocked", f"Preparation is blocked because {os_problem}; no experiment is offered."
        )
    profile = match_profile(ev, profiles)
    if profile is None:
        return _Draft(
            "blocked",
            f"There is no reviewed profile for {ev.os.id} {ev.os.version_id} on {ev.arch}; "
            "preparation is blocked.",
        )
    assert ev.os.id is not None and ev.os.version_id is not None  # _os_problem checked
    gate = package_gate_problems(ev.os.id, ev.os.version_id, profile.package_map)
    if gate:
        return _Draft(
            "blocked", f"Profile {profile.id} fails the package gate: {gate[0][1]}.", profile
        )
    if len(strix) > 1:
        return _Draft(
            "blocked",
            f"{len(strix)} Strix Halo GPUs are reported, which one computer cannot have; "
            "preparation is blocked and no experiment is offered.",
            profile,
        )
    outcome = assess(ev, profile, strix[0])
    others = [d for d in ev.pci.devices if not d.is_strix_halo]
    if not others:
        if outcome.state == "blocked":
            return _Draft("blocked", outcome.message, profile)
        return _Draft(outcome.state, outcome.message, profile, outcome=outcome)
    other_ids = ", ".join(sorted(d.pci_id for d in others))
    second_amd = sorted(d.pci_id for d in others if d.vendor == AMD_VENDOR)
    if outcome.state == "ready" and not second_amd:
        # no kernel change and no other AMD GPU: the common Strix Halo + NVIDIA appliance,
        # not an experiment (operations.md, Plan rules)
        return _Draft(
            "ready",
            f"{outcome.message} The other display GPUs ({other_ids}) keep their drivers: "
            "the kernel is not changed.",
            profile,
            outcome=outcome,
        )
    blocked = (
        f"The Strix Halo GPU shares this computer's kernel with other display GPUs "
        f"({other_ids}), so preparation is blocked"
    )
    if outcome.state == "blocked":
        return _Draft(
            "blocked", f"{blocked}, and no experiment is offered: {outcome.message}", profile
        )
    why = (
        f"a second AMD GPU ({', '.join(second_amd)}) shares the amdgpu driver"
        if second_amd
        else "the kernel change it needs can break the other GPUs' drivers"
    )
    return _Draft(
        "blocked",
        f"{blocked}: {why}. An experiment with the same reviewed profile is offered, which runs "
        "only in experiment mode with experiments allowed.",
        profile,
        experiment=outcome,
        engine_validation_available=not second_amd,
    )


def _experiment(ev: Evidence, draft: _Draft, identity: dict[str, Any]) -> Experiment | None:
    outcome, profile = draft.experiment, draft.profile
    if outcome is None or profile is None or outcome.state not in ("ready", "available"):
        return None
    state: ExperimentState = "ready" if outcome.state == "ready" else "available"
    validation = (
        "The GPU engine can be validated afterwards."
        if draft.engine_validation_available
        else "A second AMD GPU is present, so the GPU engine cannot be validated and the "
        "preparation ends unverified."
    )
    message = clip_message(
        f"{EXPERIMENT_WARNING} Display GPUs: {', '.join(ev.pci.display_ids)}. {validation} "
        f"{outcome.message}"
    )
    exp = Experiment(
        id="",
        state=state,
        message=message,
        profile_id=profile.id,
        profile_version=profile.published_version,
        gpu_profile=profile.gpu_profile,
        engine_validation_available=draft.engine_validation_available,
        packages=outcome.packages,
        reboot_required=outcome.reboot_required,
        target_kernel=outcome.target_kernel,
        display_gpus=ev.pci.display_ids,
    )
    exp_id = sha256_hex({"kind": _EXPERIMENT_KIND, "experiment": exp.content(), "host": identity})
    return replace(exp, id=exp_id)


def plan_preparation(ev: Evidence, profiles: Sequence[Profile]) -> Plan:
    draft = _draft(ev, profiles)
    identity = plan_identity(ev, profiles)
    profile, outcome = draft.profile, draft.outcome
    plan = Plan(
        state=draft.state,
        message=clip_message(draft.message),
        profile_id=profile.id if profile else "",
        profile_version=profile.published_version if profile else "",
        gpu_profile=profile.gpu_profile if profile else "",
        experimental=profile.experimental if profile else False,
        packages=outcome.packages if outcome else (),
        target_kernel=(
            outcome.target_kernel if outcome else (profile.target_kernel if profile else "")
        ),
        reboot_required=outcome.reboot_required if outcome else False,
        display_gpus=ev.pci.display_ids,
        id="",
        experiment=_experiment(ev, draft, identity),
    )
    plan_id = sha256_hex({"kind": _PLAN_KIND, "plan": plan.content(), "host": identity})
    return replace(plan, id=plan_id)
