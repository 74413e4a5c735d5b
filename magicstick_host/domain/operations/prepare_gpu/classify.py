"""prepare-gpu's steps without an outcome, each told from fresh evidence (operations.md, "The
step protocol"). Never run again to find out."""

from __future__ import annotations

from magicstick_host.domain.decisions import ClassifiedStep, SetPhase, Situation, Wait
from magicstick_host.domain.operations.prepare_gpu.data import data_of
from magicstick_host.domain.operations.prepare_gpu.declared import (
    ACTIVATE_MODULE,
    INSTALL_PACKAGES,
    MODULE_ACTIVATION,
    MODULE_NAME,
    REFRESH_EVIDENCE,
)
from magicstick_host.domain.operations.prepare_gpu.handoff import desired_module_spec
from magicstick_host.domain.operations.shutdown_steps import classify_shutdown
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.state import Operation
from magicstick_host.lite_dataclasses import replace


def classify(op: Operation, now: Situation) -> ClassifiedStep | Wait:
    step = op.open_step
    assert step is not None
    if step.name == INSTALL_PACKAGES:
        return classify_install(op, now)
    if step.name == ACTIVATE_MODULE:
        return classify_activation(op, now)
    if step.name == REFRESH_EVIDENCE:
        return classify_refresh(op)
    return classify_shutdown(op, now.ev, scheduled=Phase.REBOOT_SCHEDULED)


def classify_install(op: Operation, now: Situation) -> ClassifiedStep:
    """The package step has no outcome: decide from dpkg and /boot. Never install again."""
    ev, data = now.ev, data_of(op)
    wanted = data.packages or {}
    have = ev.packages.installed
    # a package dpkg left between states is not "not installed" (issue #25)
    between = {u.package: u.status.split()[2] for u in ev.packages.unsettled}
    wrong = {n: have.get(n, between.get(n, "not installed"))
             for n, v in wanted.items() if have.get(n) != v}
    kernel_ready = data.target_kernel in ev.packages.boot_kernels
    if not wrong and kernel_ready and not ev.unknown("packages"):
        return ClassifiedStep(
            "classified-done",
            "dpkg shows every reviewed package at its pinned version and the kernel in /boot",
            SetPhase(
                Phase.PREPARING,
                "The reviewed packages are installed.",
                data=replace(data, install_done=True),
                outcome="uncertain",
            ),
        )
    found = ", ".join(f"{n} {v}" for n, v in sorted(wrong.items())) or "the kernel not in /boot"
    return ClassifiedStep(
        "unknown",
        f"dpkg shows {found}",
        SetPhase(
            Phase.INTERRUPTED,
            f"The package step was interrupted; dpkg shows {found}. Nothing was re-run and the "
            "computer was not restarted. Check `dpkg --audit` at the console.",
            outcome="uncertain",
        ),
    )


def classify_activation(op: Operation, now: Situation) -> ClassifiedStep | Wait:
    if not now.cluster.ok:
        return Wait("Waiting for Kubernetes to check the runtime handoff.")
    spec = (now.cluster.object(MODULE_ACTIVATION.key) or {}).get("spec")
    if spec == desired_module_spec(str(data_of(op).gpu_profile)):
        return ClassifiedStep(
            "classified-done",
            f"ModuleActivation {MODULE_NAME} holds this profile",
            SetPhase(Phase.REGISTERING, "The runtime profile is active; waiting for registration."),
        )
    return ClassifiedStep(
        "unknown",
        f"ModuleActivation {MODULE_NAME} does not hold this profile",
        SetPhase(
            Phase.INTERRUPTED,
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
            data=replace(data_of(op), evidence_refresh="interrupted"),
            restart_clock=False,
        ),
    )
