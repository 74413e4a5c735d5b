"""When host convergence may run: the gate it shares with the worker (convergence.md). Pure.

The maintenance lock comes first (taken without waiting by the caller: busy is a quiet skip).
Then, with the lock held, convergence yields to the worker and to the host's own state:
- an operation in progress (any non-terminal phase), or a blocked worker (corrupt or unsafe
  state, removed execution state): convergence never changes a host under an operation, and
  a blocked worker needs the administrator first;
- a scheduled shutdown (`/run/systemd/shutdown/scheduled`, also when it cannot be read);
- cloud-init's base installation not finished this boot (or not known to be);
- another package manager run holding the host (dpkg's or apt's lock, unattended-upgrades), or
  its locks that cannot be probed: convergence installs packages too (operations.md).
Unknown never means "run".
"""

from __future__ import annotations

from magicstick_host.domain.evidence import PackageManagerRun, ServicesInfo
from magicstick_host.domain.state import State
from magicstick_host.errors import ExitCode
from magicstick_host.lite_dataclasses import dataclass


@dataclass(frozen=True)
class GateFacts:
    state: State | None  # None: no state file yet (a fresh host)
    state_error: str  # why the state could not be loaded; "" when it was
    services: ServicesInfo
    manager_run: PackageManagerRun | None = None
    manager_run_known: bool = True


@dataclass(frozen=True)
class Run:
    pass


@dataclass(frozen=True)
class Skip:
    # operation-active | worker-blocked | shutdown-scheduled | cloud-init | package-manager
    reason: str
    exit_code: ExitCode
    message: str


def converge_gate(facts: GateFacts) -> Run | Skip:
    if facts.state_error:
        return Skip(
            "worker-blocked",
            ExitCode.STATE_BLOCKED,
            f"skipped: the host worker's state cannot be used ({facts.state_error}); see "
            "`magicstick-host status`",
        )
    state = facts.state or State()
    if state.block is not None:
        return Skip(
            "worker-blocked",
            ExitCode.STATE_BLOCKED,
            f"skipped: the host worker is stopped ({state.block.message}); see "
            "`magicstick-host status`",
        )
    op = state.operation
    if op is not None and not op.terminal:
        return Skip(
            "operation-active",
            ExitCode.BUSY,
            f"skipped: the host operation {op.action} (request {op.request_id}) is in phase "
            f"{op.phase}",
        )
    services = facts.services
    if services.shutdown_scheduled is not None:
        mode = services.shutdown_scheduled.mode or "a shutdown"
        return Skip(
            "shutdown-scheduled",
            ExitCode.WAITING,
            f"skipped: {mode} is scheduled (/run/systemd/shutdown/scheduled); convergence runs "
            "again after it",
        )
    if services.cloud_init_present and services.cloud_init_finished is not True:
        how = "has not finished" if services.cloud_init_finished is False else "may not have "\
            "finished (its result cannot be read)"
        return Skip(
            "cloud-init",
            ExitCode.WAITING,
            f"waiting: cloud-init's base installation {how} this boot",
        )
    if facts.manager_run is not None or not facts.manager_run_known:
        who = (facts.manager_run.who if facts.manager_run is not None
               else "its locks cannot be probed")
        return Skip(
            "package-manager",
            ExitCode.BUSY,
            f"skipped: another package manager run holds the host ({who}); convergence runs "
            "again after it",
        )
    return Run()
