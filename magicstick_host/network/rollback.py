"""The network trial's own way back, independent of the tick and of Kubernetes.

Two entry points, each a short process that takes only the trial lock (never the maintenance
lock, which a slow tick may hold for minutes):
- `run_deadline_rollback`: `magicstick-host network-rollback`, started by the transient timer
  the trial arms just before `netplan apply`. If the trial is still unconfirmed once its
  deadline has passed, it restores the backup, `netplan generate`, `netplan apply`, and records
  RolledBack in the trial record.
- `run_boot_recovery`: `magicstick-host network-recovery`, run early in boot by
  `magicstick-host-network-recovery.service` before the network starts. An unfinished trial of
  an earlier boot is restored with `netplan generate` only (the network then starts on the old
  configuration); a confirmed one is only cleaned up.
The tick reads the outcome from the trial record and carries it into the operation, its
journal and its status.

A restore is idempotent (it writes known bytes and removes the managed file), so a restore cut
short by a crash is simply done again by whoever comes next; it never runs the new
configuration again.
"""

from __future__ import annotations

from collections.abc import Callable

from magicstick_host.domain.network import trial as trials
from magicstick_host.domain.network.trial import (
    BOOT_MESSAGE,
    DEADLINE_MESSAGE,
    FinishConfirmed,
    LeaveAlone,
    Restore,
    TrialAction,
    TrialRecord,
)
from magicstick_host.errors import ExitCode, LockBusyError
from magicstick_host.lite_dataclasses import dataclass
from magicstick_host.network import trial_steps as steps
from magicstick_host.network.trial_steps import TrialPorts
from magicstick_host.ports.network_store import NetworkStoreError

# longer than the longest trial step the tick runs under the lock (netplan apply: 45 s)
LOCK_WAIT_S = 90.0
__all__ = ["BOOT_MESSAGE", "DEADLINE_MESSAGE", "run_boot_recovery", "run_deadline_rollback"]


@dataclass
class RollbackDeps:
    ports: TrialPorts
    # the current boot ID (None: unreadable, then nothing is done)
    boot_id: Callable[[], str | None]
    lock_wait_s: float = LOCK_WAIT_S


@dataclass(frozen=True)
class RollbackResult:
    exit_code: ExitCode
    summary: str
    trial: TrialRecord | None = None


def run_deadline_rollback(deps: RollbackDeps) -> RollbackResult:
    return _run(deps, "deadline", lambda trial, boot, boottime: trials.deadline_action(
        trial, boot_id=boot, boottime=boottime))


def run_boot_recovery(deps: RollbackDeps) -> RollbackResult:
    return _run(deps, "boot-recovery",
                lambda trial, boot, boottime: trials.boot_action(trial, boot_id=boot))


def _run(
    deps: RollbackDeps,
    by: str,
    decide: Callable[[TrialRecord | None, str, float], TrialAction],
) -> RollbackResult:
    boot_id = deps.boot_id()
    if not boot_id:
        return RollbackResult(ExitCode.EFFECT_FAILED, "the boot ID cannot be read; nothing done")
    ports = deps.ports
    store = ports.store
    try:
        with store.lock(wait_s=deps.lock_wait_s):
            if by == "boot-recovery":
                store.sweep_partial_backups()
                ports.files.sweep_temp_files("/etc/netplan")
            trial = store.load_trial()
            action = decide(trial, boot_id, ports.clock.now().boottime)
            if isinstance(action, LeaveAlone):
                if trial is not None and trial.finished:
                    steps.clean_after_end(store, trial)
                return RollbackResult(ExitCode.OK, f"nothing to do: {action.why}", trial)
            assert trial is not None
            if isinstance(action, FinishConfirmed):
                done = steps.finish(ports, trial, "succeeded", by,
                                    "The network change was confirmed and kept.")
                return RollbackResult(ExitCode.OK, done.message, done)
            assert isinstance(action, Restore)
            done = steps.restore(ports, trial, apply=action.apply, by=by, message=action.message)
    except LockBusyError as exc:
        return RollbackResult(ExitCode.BUSY, str(exc))
    except NetworkStoreError as exc:
        return RollbackResult(exc.exit_code, str(exc))
    code = ExitCode.OK if done.outcome == "rolled-back" else ExitCode.EFFECT_FAILED
    return RollbackResult(code, done.message, done)
