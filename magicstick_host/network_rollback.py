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
journal and its status. `restore_trial` and `finish_confirmed` are shared with the tick.

A restore is idempotent (it writes known bytes and removes the managed file), so a restore cut
short by a crash is simply done again by whoever comes next; it never runs the new
configuration again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from magicstick_host.domain import network_trial as trials
from magicstick_host.domain.network_trial import (
    FinishConfirmed,
    LeaveAlone,
    Restore,
    TrialAction,
    TrialRecord,
)
from magicstick_host.effects import network as effects
from magicstick_host.errors import ExitCode, LockBusyError
from magicstick_host.ports.clock import Clock
from magicstick_host.ports.host_files import RootedHostFiles
from magicstick_host.ports.network_store import NetworkStore, NetworkStoreError
from magicstick_host.ports.runner import CommandRunner

# longer than the longest trial step the tick runs under the lock (netplan apply: 45 s)
LOCK_WAIT_S = 90.0
DEADLINE_MESSAGE = (
    "The network change was not confirmed before its deadline, so the previous configuration "
    "was restored (netplan generate and apply). Nothing else was changed."
)
BOOT_MESSAGE = (
    "The host restarted during the network trial; the previous configuration was restored "
    "early in boot, before the network started."
)
CONCURRENT_MESSAGE = (
    "Concurrent local changes: {names} appeared in /etc/netplan during the trial, so nothing "
    "was overwritten. The backup of the previous configuration is kept in {backup}; check "
    "/etc/netplan at the console."
)


@dataclass
class RollbackDeps:
    root: str
    state_dir: Path
    runner: CommandRunner
    clock: Clock
    # the current boot ID (None: unreadable, then nothing is done)
    boot_id: Callable[[], str | None]
    lock_wait_s: float = LOCK_WAIT_S
    # crash-injection seam for the tests: called with a point name before each effect
    crash: Callable[[str], None] = lambda point: None


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
    store = NetworkStore(deps.state_dir)
    try:
        with store.lock(wait_s=deps.lock_wait_s):
            if by == "boot-recovery":
                store.sweep_partial_backups()
            trial = store.load_trial()
            action = decide(trial, boot_id, deps.clock.now().boottime)
            if isinstance(action, LeaveAlone):
                if trial is not None and trial.finished:
                    clean_after_end(store, trial)
                return RollbackResult(ExitCode.OK, f"nothing to do: {action.why}", trial)
            assert trial is not None
            if isinstance(action, FinishConfirmed):
                done = finish_confirmed(deps, store, trial, by)
                return RollbackResult(ExitCode.OK, done.message, done)
            assert isinstance(action, Restore)
            done = restore_trial(deps, store, trial, apply=action.apply, by=by,
                                 message=DEADLINE_MESSAGE if action.apply else BOOT_MESSAGE)
    except LockBusyError as exc:
        return RollbackResult(ExitCode.BUSY, str(exc))
    except NetworkStoreError as exc:
        return RollbackResult(exc.exit_code, str(exc))
    code = ExitCode.OK if done.outcome == "rolled-back" else ExitCode.EFFECT_FAILED
    return RollbackResult(code, done.message, done)


def restore_trial(
    deps: RollbackDeps, store: NetworkStore, trial: TrialRecord, *, apply: bool, by: str,
    message: str,
) -> TrialRecord:
    """Restore the backup of `trial` (the trial lock is held). Returns the finished record."""
    files = RootedHostFiles(deps.root)
    trial = _save(store, trials.advance(trial, "rolling-back", deps.clock.now().wall))
    unknown = trials.concurrent_changes(trial, effects.present_netplan_files(files))
    if unknown:
        text = CONCURRENT_MESSAGE.format(names=", ".join(unknown), backup=store.backup_path)
        return _end(deps, store, trial, "failed", by, text)
    deps.crash("before-restore")
    ok, detail = effects.restore_netplan(files, store, trial)
    if not ok:
        return _end(deps, store, trial, "failed", by,
                    f"The previous network configuration could not be restored: {detail}")
    deps.crash("before-generate")
    ok, detail = effects.netplan_generate(deps.runner)
    if ok and apply:
        deps.crash("before-apply")
        ok, detail = effects.netplan_apply(deps.runner)
    if not ok:
        return _end(deps, store, trial, "failed", by,
                    f"The previous netplan files were restored, but {detail}.")
    if apply:
        effects.disarm_rollback_timer(deps.runner)  # best effort: it may be what runs us
    return _end(deps, store, trial, "rolled-back", by, message)


def finish_confirmed(
    deps: RollbackDeps, store: NetworkStore, trial: TrialRecord, by: str
) -> TrialRecord:
    """The confirmed configuration stays: drop the backup and the settings, record Succeeded."""
    return _end(deps, store, trial, "succeeded", by,
                "The network change was confirmed and kept.")


def _end(
    deps: RollbackDeps, store: NetworkStore, trial: TrialRecord, outcome: str, by: str,
    message: str,
) -> TrialRecord:
    done = _save(store, trials.finish(trial, outcome, by, message, deps.clock.now().wall))
    # after the outcome is durable: a crash in between leaves only files that
    # `clean_after_end` removes (the credentials must not outlive the trial)
    clean_after_end(store, done)
    return done


def clean_after_end(store: NetworkStore, trial: TrialRecord) -> None:
    """Remove what an ended trial no longer needs: the settings (with the password) always,
    the backup unless the outcome is Failed (then it is what the administrator restores)."""
    store.remove_settings()
    if trial.outcome in ("succeeded", "rolled-back"):
        store.drop_backup()


def _save(store: NetworkStore, trial: TrialRecord) -> TrialRecord:
    store.save_trial(trial)
    return trial
