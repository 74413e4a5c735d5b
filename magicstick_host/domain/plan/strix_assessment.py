"""What preparing one Strix Halo host would take, given its matched profile (Plan rules).

This is the single-GPU judgement. The planner (plan/planner.py) wraps it: it decides whether the
host is a single-GPU host at all, and for a mixed host offers this outcome only as an
experiment.

Newer kernels are never downgraded:
- a running kernel newer than the target has the fixes by the numbers, so it is `ready` or
  blocked for diagnosis, never `available`;
- a kernel newer than the target that is installed in /boot but not running would be booted
  instead of the target after the install (GRUB boots the newest), so the plan is blocked and
  asks for a restart into it;
- an installed profile package newer than the pin (Debian order) is blocked too: APT would
  need a downgrade, which the package gate forbids.

A package dpkg left between states (unpacked, half-configured, half-installed, awaiting or
pending triggers, reinst-required) is neither absent nor installed: a kernel image in
triggers-awaited after an interrupted trigger run must not be installed again, and no restart
may go into a kernel whose initramfs may be stale. Any such package blocks a plan that changes
packages or restarts (APT would have to finish dpkg's work first, and the boot may need it),
with the fix in the message. A `ready` host changes neither, so it is not blocked by them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.evidence import Evidence, PciDevice
from magicstick_host.domain.fingerprint import hardware_fingerprint
from magicstick_host.domain.kernels import is_newer_kernel, is_suitable_kernel
from magicstick_host.domain.profiles import Profile
from magicstick_host.domain.readiness import amd_host_driver_ready
from magicstick_host.domain.text import clip_message
from magicstick_host.domain.versions import compare_versions
from magicstick_host.lite_dataclasses import dataclass

if TYPE_CHECKING:
    from magicstick_host.domain.parsers.dpkg_status import Unsettled
    from magicstick_host.domain.plan.document import PlanState

# the unsettled packages a message names; the rest are counted
_NAMED_UNSETTLED = 4
_CONFIGURE = "dpkg --configure -a"

# evidence the plan id binds to: unknown here means blocked, never available
_REQUIRED = (
    ("kernel.release", "the running kernel release"),
    ("kernel.package_version", "the running kernel's package version"),
    ("boot_id", "the boot ID"),
    ("packages", "the installed package versions"),
)


@dataclass(frozen=True)
class Outcome:
    state: PlanState  # ready, available or blocked
    message: str
    packages: tuple[tuple[str, str], ...] = ()
    reboot_required: bool = False
    target_kernel: str = ""


def _blocked(message: str, profile: Profile) -> Outcome:
    return Outcome("blocked", message, target_kernel=profile.target_kernel)


def missing_evidence(ev: Evidence) -> str | None:
    """Why the identity-bearing evidence is incomplete, or None when it is all there."""
    values = {
        "kernel.release": ev.kernel.release,
        "kernel.package_version": ev.kernel.package_version,
        "boot_id": ev.boot_id,
        "packages": "",
    }
    for path, what in _REQUIRED:
        unknown = ev.unknown(path)
        if unknown:
            return f"{what} could not be read ({unknown[0].reason})"
        if values[path] is None:
            return f"{what} could not be read"
    if hardware_fingerprint(ev) is None:
        return (
            "the hardware identity (CPU model, DMI vendor and product, architecture or a "
            "display device attribute) could not be read completely"
        )
    return None


def unsettled_problem(unsettled: tuple[Unsettled, ...]) -> str | None:
    """Why dpkg's unfinished work blocks a package change or restart: the fix first (a long
    list of names is what a clipped message loses), then the packages."""
    if not unsettled:
        return None
    fixes = sorted(dict.fromkeys(u.fix for u in unsettled), key=lambda f: f != _CONFIGURE)
    run = ", then ".join(f"`{f}`" for f in fixes[:_NAMED_UNSETTLED])
    named = ", ".join(
        f"{u.package}{':' + u.architecture if u.architecture else ''} ({u.status.split()[2]}"
        f"{', reinst-required' if u.status.split()[1] == 'reinstreq' else ''})"
        for u in unsettled[:_NAMED_UNSETTLED])
    more = len(unsettled) - _NAMED_UNSETTLED
    if more > 0:
        named += f" and {more} more"
    return (
        f"Preparation is blocked because dpkg has unfinished work: run {run} at the console, "
        f"then inspect again. Neither installed nor absent: {named}. Such a package is not "
        "installed again, and the host is not restarted into a kernel whose initramfs may be "
        "stale."
    )


def assess(ev: Evidence, profile: Profile, device: PciDevice) -> Outcome:
    missing = missing_evidence(ev)
    if missing is not None:
        return _blocked(f"Preparation is blocked because {missing}.", profile)
    release = ev.kernel.release
    assert release is not None  # missing_evidence checked it
    target = profile.target_kernel
    if is_suitable_kernel(release, target):
        ready, reason = amd_host_driver_ready(ev, device)
        if ready:
            return Outcome(
                "ready",
                f"The running kernel {release} carries the Strix Halo fixes and {reason}; "
                f"preparation only activates the runtime profile {profile.gpu_profile}, "
                "with no package change and no restart.",
                target_kernel=release,
            )
        return _blocked(
            f"The running kernel {release} carries the Strix Halo fixes, but the host driver "
            f"is not ready: {reason}. Diagnose the driver; a repeated install or reboot is "
            "not a repair.",
            profile,
        )
    # packages left between states while another run holds the host are that run's, not a
    # block (operations.md); a preparation waits for the run to finish (prepare_gpu/waits.py)
    unsettled = None if ev.packages.manager_run else unsettled_problem(ev.packages.unsettled)
    if unsettled is not None:
        return _blocked(clip_message(unsettled), profile)
    changes: list[tuple[str, str]] = []
    for name, pinned in profile.packages:
        installed = ev.packages.installed.get(name)
        if installed is None:
            changes.append((name, pinned))
            continue
        try:
            order = compare_versions(installed, pinned)
        except ValueError:
            return _blocked(
                f"The installed version {installed!r} of {name} cannot be compared with the "
                f"pinned {pinned}; preparation is blocked.",
                profile,
            )
        if order > 0:
            return _blocked(
                f"{name} {installed} is newer than the profile's pinned {pinned}; a newer "
                "kernel is never downgraded, so preparation is blocked.",
                profile,
            )
        if order < 0:
            changes.append((name, pinned))
    newer = [k for k in (release, *ev.packages.boot_kernels) if is_newer_kernel(k, target)]
    if newer:
        return _blocked(
            f"Kernel {sorted(newer)[-1]} is newer than the profile's target {target} and would "
            "be booted instead of it; a newer kernel is never downgraded. Restart the host "
            "into the newer kernel and inspect again.",
            profile,
        )
    if not changes and target not in ev.packages.boot_kernels:
        return _blocked(
            f"The pinned packages are installed, but /boot has no kernel and initrd for "
            f"{target}; preparation is blocked.",
            profile,
        )
    install = ", ".join(f"{n}={v}" for n, v in changes)
    step = f"install {install} and restart" if changes else "restart"
    return Outcome(
        "available",
        f"The running kernel {release} lacks the Strix Halo (gfx1151) fixes: {step} into "
        f"{target} with the experimental reviewed profile {profile.id} "
        f"version {profile.version}, then activate the runtime profile {profile.gpu_profile}.",
        packages=tuple(changes),
        reboot_required=True,
        target_kernel=target,
    )
