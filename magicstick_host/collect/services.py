"""cloud-init, a pending shutdown, and a pending reboot request."""

from __future__ import annotations

from magicstick_host.collect.reader import Reader
from magicstick_host.domain.evidence import GPU_PUBLISHER, ScheduledShutdown, ServicesInfo
from magicstick_host.domain.parsers.shutdown import parse_scheduled_shutdown
from magicstick_host.ports.hostfs import HostReadError

SHUTDOWN_SCHEDULED = "/run/systemd/shutdown/scheduled"


def collect_services(r: Reader, cmdline: tuple[str, ...] | None) -> ServicesInfo:
    return ServicesInfo(
        cloud_init_finished=_cloud_init_finished(r),
        cloud_init_present=_cloud_init_present(r, cmdline),
        shutdown_scheduled=_shutdown(r),
        # unknown never means "act": an unreadable marker does not ask for a reboot
        reboot_required=r.exists("/run/reboot-required", "services.reboot_required",
                                 otherwise=False),
        # best effort: an unreadable path skips the refresh, which never stops the handoff
        gpu_publisher_present=r.exists(GPU_PUBLISHER, "services.gpu_publisher_present",
                                       otherwise=False),
    )


def _cloud_init_present(r: Reader, cmdline: tuple[str, ...] | None) -> bool:
    field = "services.cloud_init_present"
    # when in doubt, say present: the planner then waits for it instead of racing it
    if not r.exists("/usr/bin/cloud-init", field, otherwise=True):
        return False
    # the documented ways to disable it: it will never finish, so there is nothing to await
    if r.exists("/etc/cloud/cloud-init.disabled", field, otherwise=False):
        return False
    return "cloud-init=disabled" not in (cmdline or ())


def _cloud_init_finished(r: Reader) -> bool | None:
    # result.json lives on /run (tmpfs): it means "finished during this boot"
    path = "/run/cloud-init/result.json"
    try:
        return r.fs.exists(path)
    except HostReadError as exc:
        r.unknown("services.cloud_init_finished", path, exc.reason)
        return None


def _shutdown(r: Reader) -> ScheduledShutdown | None:
    text = r.text(SHUTDOWN_SCHEDULED, "services.shutdown_scheduled", optional=True)
    if text is None:
        if r.exists(SHUTDOWN_SCHEDULED, "services.shutdown_scheduled", otherwise=False):
            # present but unreadable: a shutdown is pending, we just do not know when
            return ScheduledShutdown(mode=None, usec=None)
        return None
    parsed = r.parse(text, SHUTDOWN_SCHEDULED, "services.shutdown_scheduled",
                     parse_scheduled_shutdown)
    return parsed if parsed is not None else ScheduledShutdown(mode=None, usec=None)
