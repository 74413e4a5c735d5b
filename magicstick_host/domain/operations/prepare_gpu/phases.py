"""prepare-gpu, stage by stage until the handoff (operations.md). Pure decisions.

Preparing (waiting while another package manager run holds the host: waits.py; then the
reviewed packages, once) → RebootScheduled (only with the target kernel's files
in /boot; budget 1) → the new boot must run the target kernel → Verifying (driver ready,
≤300 s) → the handoff (handoff.py) → Registering (registration.py). A `ready` plan skips the
packages and the restart.
"""

from __future__ import annotations

from magicstick_host.domain.decisions import Decision, RunStep, SetPhase, Situation, Wait
from magicstick_host.domain.operations.prepare_gpu.data import data_of
from magicstick_host.domain.operations.prepare_gpu.declared import INSTALL_PACKAGES
from magicstick_host.domain.operations.prepare_gpu.handoff import handoff
from magicstick_host.domain.operations.prepare_gpu.registration import strix_ready
from magicstick_host.domain.operations.prepare_gpu.waits import before_install
from magicstick_host.domain.operations.shutdown_steps import shutdown_step, waiting_for_new_boot
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.state import Operation
from magicstick_host.domain.text import clip_message
from magicstick_host.lite_dataclasses import replace


def accepted(op: Operation, now: Situation) -> Decision:
    return SetPhase(Phase.PREPARING, "Preparing the host: checking the reviewed plan.")


def preparing(op: Operation, now: Situation) -> Decision:
    ev, data = now.ev, data_of(op)
    if data.packages and not data.install_done:
        held = before_install(op, now)
        if held is not None:
            return held
        pins = ", ".join(f"{k}={v}" for k, v in sorted(data.packages.items()))
        return RunStep(
            step=INSTALL_PACKAGES,
            inputs={
                "profileId": data.profile_id,
                "osVersionId": data.os_version_id,
                "packages": data.packages,
                "targetKernel": data.target_kernel,
            },
            phase_on_done=Phase.PREPARING,
            message_on_done=f"Installed {pins}.",
            message_on_failure="Installing the reviewed packages failed; nothing was retried.",
            data_on_done=replace(data, install_done=True),
        )
    if data.reboot_required:
        target = data.target_kernel
        if target not in ev.packages.boot_kernels:
            return SetPhase(
                Phase.FAILED,
                f"/boot/vmlinuz-{target} and /boot/initrd.img-{target} are not both present, so "
                "the computer was not restarted.",
            )
        unsettled = ev.packages.unsettled
        if unsettled:
            # an interrupted trigger run leaves the image awaiting its initramfs (issue #25)
            names = ", ".join(f"{u.package} ({u.status.split()[2]})" for u in unsettled[:4])
            fixes = " and ".join(dict.fromkeys(f"`{u.fix}`" for u in unsettled[:4]))
            return SetPhase(
                Phase.FAILED,
                clip_message(
                    f"dpkg has unfinished work, so the computer was not restarted into {target}, "
                    f"whose initramfs may be stale: run {fixes} at the console, then request the "
                    f"preparation again. Neither installed nor absent: {names}."),
            )
        return shutdown_step(
            "reboot", now.limits, then=Phase.REBOOT_SCHEDULED, why=f"Restarting into {target}. "
        )
    ready, why = strix_ready(ev)
    if not ready:
        return SetPhase(Phase.VERIFYING, f"Waiting for the GPU driver ({why}).")
    return handoff(op, now)


def reboot_scheduled(op: Operation, now: Situation) -> Decision:
    ev, data = now.ev, data_of(op)
    still = waiting_for_new_boot(op, ev, now.boottime, now.limits)
    if still is not None:
        return still
    if ev.kernel.release != data.target_kernel:
        return SetPhase(
            Phase.FAILED,
            f"After the restart the running kernel is {ev.kernel.release}, not "
            f"{data.target_kernel}. The previous kernel stays available in the boot menu; "
            "nothing was repeated.",
        )
    return SetPhase(Phase.VERIFYING, f"Running {ev.kernel.release}; waiting for the GPU driver.")


def verifying(op: Operation, now: Situation) -> Decision:
    ready, why = strix_ready(now.ev)
    if ready:
        return handoff(op, now)
    if now.boottime - op.phase_since_boottime > now.limits.driver_ready_deadline_s:
        return SetPhase(
            Phase.FAILED,
            f"The GPU driver did not become ready within "
            f"{int(now.limits.driver_ready_deadline_s)} s: {why}. Nothing was repeated.",
        )
    return Wait(f"Verifying: waiting for the GPU driver ({why}).")
