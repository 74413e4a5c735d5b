"""prepare-gpu before its install: the host must not be busy with another package manager run,
and the plan must still be the reviewed one (operations.md, "When another package manager run
holds the host"). Pure.

Ubuntu runs apt by itself (unattended-upgrades after a boot and daily, apt-daily, cloud-init,
an administrator's apt), and `apt-get` does not wait for dpkg's lock. So Preparing waits while
another run holds the host, says who, and keeps the report fresh; for at most
`package_manager_wait_s` from the start of Preparing (its first tick is the first that can see
the host busy). Then the plan is computed again: if that run changed the packages the plan was
made from, nothing is installed.
"""

from __future__ import annotations

from magicstick_host.domain.decisions import Decision, SetPhase, Situation, Wait
from magicstick_host.domain.operations.prepare_gpu.data import data_of
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.state import Operation


def before_install(op: Operation, now: Situation) -> Decision | None:
    """None when the install may run now; else why it waits or ends."""
    ev, limits = now.ev, now.limits
    if ev.boot_id != op.phase_boot_id:
        # a restart (a power loss, someone at the console) before the install: the plan was
        # approved for the boot that ended, and nothing has run
        return SetPhase(
            Phase.INTERRUPTED,
            "The host restarted before the reviewed packages were installed; nothing was "
            "installed. Review the plan again and create a new request if it is still wanted.",
        )
    run, known = ev.packages.manager_run, ev.packages.manager_run_known
    if run is not None or not known:
        waited = now.boottime - op.phase_since_boottime
        minutes = int(limits.package_manager_wait_s // 60)
        if waited > limits.package_manager_wait_s:
            return SetPhase(
                Phase.FAILED,
                f"The package manager stayed busy for {minutes} minutes; nothing was "
                "installed. Create a new request once it has finished.",
            )
        if run is None:
            return Wait(
                "Waiting: whether another package manager run holds the host cannot be told "
                "right now (its lock could not be probed); nothing has been installed.")
        return Wait(
            f"Waiting for another package manager run to finish ({run.who}); nothing has been "
            f"installed. The preparation goes on when it ends, for at most {minutes} minutes.")
    reviewed = op.plan_id
    plan = now.plan
    current = plan.get("experiment") if data_of(op).experiment else plan
    if not isinstance(current, dict) or current.get("id") != reviewed:
        return SetPhase(
            Phase.FAILED,
            "The packages changed since the plan was reviewed (another package manager run "
            "finished); nothing was installed. Review the new plan.",
        )
    return None
