"""The steps of a network trial, each under the trial lock, each recording in the trial record
what it is about to do before it does it (network.md, "The trial"; the record's stages are in
domain/network/trial.py). They perform what the operation decided and decide nothing else.

- `begin`: back up /etc/netplan and record the trial (stage backed-up): nothing changed yet;
- `write_and_generate`: write the managed file and run `netplan generate` (30 s); a refused
  configuration is restored at once (nothing was applied);
- `apply_with_deadline`: record the deadline, arm the independent rollback timer, then
  `netplan apply` (45 s). Without an armed timer nothing is applied;
- `keep`: the confirmed configuration stays (stage confirmed is the commit point), the timer
  is stopped, the backup and the settings go;
- `restore`: the way back (also run by the deadline timer and the boot recovery).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from magicstick_host.domain.network import trial as trials
from magicstick_host.domain.network.evidence import MANAGED_NETPLAN_NAME
from magicstick_host.domain.network.trial import TrialRecord
from magicstick_host.effects import network as effects
from magicstick_host.lite_dataclasses import dataclass
from magicstick_host.ports.clock import Clock
from magicstick_host.ports.host_files import RootedHostFiles
from magicstick_host.ports.network_store import NetworkStore
from magicstick_host.ports.runner import CommandRunner

if TYPE_CHECKING:
    from typing import Any

CONCURRENT_MESSAGE = (
    "Concurrent local changes: {names} appeared in /etc/netplan during the trial, so nothing "
    "was overwritten. The backup of the previous configuration is kept in {backup}; check "
    "/etc/netplan at the console."
)


def _no_crash(point: str) -> None:
    """Production: crash points matter only to the crash-point tests."""


@dataclass
class TrialPorts:
    root: str
    state_dir: Path
    runner: CommandRunner
    clock: Clock
    # crash-injection seam for the tests: called with a point name before each effect
    crash: Callable[[str], None] = _no_crash

    @property
    def store(self) -> NetworkStore:
        return NetworkStore(self.state_dir)

    @property
    def files(self) -> RootedHostFiles:
        return RootedHostFiles(self.root)


def _save(store: NetworkStore, trial: TrialRecord) -> TrialRecord:
    store.save_trial(trial)
    return trial


def begin(
    ports: TrialPorts,
    *,
    request_id: str,
    request_uid: str,
    settings: dict[str, object],
    boot_id: str,
    cluster_addresses: Sequence[str],
) -> tuple[TrialRecord | None, str]:
    """Back up every /etc/netplan/*.yaml, then record the trial. Nothing on the host changes."""
    store = ports.store
    ports.crash("before-backup")
    backed, detail = effects.backup_netplan(ports.files, store)
    if backed is None:
        return None, detail
    trial = trials.new_trial(request_id=request_id, request_uid=request_uid,
                             settings=settings, boot_id=boot_id,
                             backup=[trials.BackedUpFile(*item) for item in backed],
                             cluster_addresses=cluster_addresses, wall=ports.clock.now().wall)
    ports.crash("before-record")
    return _save(store, trial), detail


def write_and_generate(
    ports: TrialPorts, trial: TrialRecord, document: dict[str, Any]
) -> TrialRecord:
    """Write the managed file (replacing every backed-up file) and `netplan generate`. A
    failure restores the backup (generate only: nothing was applied) and ends the trial."""
    store = ports.store
    trial = _save(store, trials.advance(trial, "writing", ports.clock.now().wall))
    ports.crash("before-write")
    digest, detail = effects.write_managed(ports.files, document, sorted(trial.backed_up_names))
    if digest is None:
        return restore(ports, trial, apply=False, by="tick",
                       message=f"The new network configuration could not be written ({detail}); "
                               "the previous one was restored, nothing was applied.",
                       outcome="failed")
    trial = _save(store, trials.advance(trial, "generating", ports.clock.now().wall,
                                        managed_sha256=digest))
    ports.crash("before-generate")
    ok, detail = effects.netplan_generate(ports.runner)
    if not ok:
        return restore(ports, trial, apply=False, by="tick",
                       message=f"netplan refused the new configuration ({detail}); the previous "
                               "one was restored and nothing was applied.",
                       outcome="failed")
    return trial


def apply_with_deadline(
    ports: TrialPorts, trial: TrialRecord, boot_id: str, deadline: trials.Deadline | None = None
) -> TrialRecord:
    """Record the deadline (`deadline`, else the confirmation window from now), arm the
    rollback timer for it, `netplan apply`. The trial then awaits its confirmation; a failed
    apply is rolled back at once."""
    store = ports.store
    now = ports.clock.now()
    deadline = deadline or trials.deadline_for(boot_id, now.boottime, now.wall)
    trial = _save(store, trials.advance(trial, "applying", now.wall, deadline=deadline))
    ports.crash("before-arm")
    window = max(1.0, deadline.boottime - now.boottime)
    armed, detail = effects.arm_rollback_timer(ports.runner, window)
    if not armed:
        return restore(ports, trial, apply=False, by="tick",
                       message=f"The independent rollback could not be armed ({detail}); the "
                               "previous configuration was restored and nothing was applied.",
                       outcome="failed")
    ports.crash("before-apply")
    ok, detail = effects.netplan_apply(ports.runner)
    if not ok:
        return restore(ports, trial, apply=True, by="tick",
                       message=f"{detail}; the previous configuration was restored.",
                       outcome="failed")
    ports.crash("after-apply")
    return _save(store, trials.advance(trial, "awaiting", ports.clock.now().wall))


def keep(ports: TrialPorts, trial: TrialRecord) -> TrialRecord:
    """The confirmed change stays: record it (the commit point), stop the timer, clean up."""
    store = ports.store
    trial = _save(store, trials.advance(trial, "confirmed", ports.clock.now().wall))
    ports.crash("after-confirm")
    effects.disarm_rollback_timer(ports.runner)
    return finish(ports, trial, "succeeded", "tick", "The network change was confirmed and kept.")


def restore(
    ports: TrialPorts, trial: TrialRecord, *, apply: bool, by: str, message: str,
    outcome: str = "rolled-back",
) -> TrialRecord:
    """Put the backup back, `netplan generate` (and `apply` on a running system), record the
    outcome: `outcome` (rolled-back; failed when a step of the trial itself failed) once the
    previous configuration is back. Unknown new files in /etc/netplan: Failed, nothing
    overwritten."""
    store, files = ports.store, ports.files
    trial = _save(store, trials.advance(trial, "rolling-back", ports.clock.now().wall))
    unknown = trials.concurrent_changes(trial, effects.present_netplan_files(files))
    if unknown:
        text = CONCURRENT_MESSAGE.format(names=", ".join(unknown), backup=store.backup_path)
        return finish(ports, trial, "failed", by, text)
    ports.crash("before-restore")
    ok, detail = effects.restore_netplan(files, store,
                                       [(f.name, f.sha256, f.mode) for f in trial.backup])
    if not ok:
        return finish(ports, trial, "failed", by,
                      f"The previous network configuration could not be restored: {detail}")
    ports.crash("before-restore-generate")
    ok, detail = effects.netplan_generate(ports.runner)
    if ok and apply:
        ports.crash("before-restore-apply")
        ok, detail = effects.netplan_apply(ports.runner)
    if not ok:
        return finish(ports, trial, "failed", by,
                      f"The previous netplan files were restored, but {detail}.")
    if apply:
        effects.disarm_rollback_timer(ports.runner)  # best effort: it may be what runs us
    return finish(ports, trial, outcome, by, message)


def finish(
    ports: TrialPorts, trial: TrialRecord, outcome: str, by: str, message: str
) -> TrialRecord:
    """Record the outcome, then remove what the ended trial no longer needs."""
    store = ports.store
    done = _save(store, trials.finish(trial, outcome, by, message, ports.clock.now().wall))
    clean_after_end(store, done)
    return done


def clean_after_end(store: NetworkStore, trial: TrialRecord) -> None:
    """The settings (with the password) always go once the trial has ended; the backup too,
    unless the outcome is Failed (then it is what the administrator restores from). Also
    called for an ended trial found later: a crash between the outcome and this cleanup
    leaves nothing behind for long."""
    store.remove_settings()
    if trial.outcome in ("succeeded", "rolled-back"):
        store.drop_backup()


def managed_sha256_now(ports: TrialPorts) -> str | None:
    present = effects.present_netplan_files(ports.files)
    return present.get(MANAGED_NETPLAN_NAME)
