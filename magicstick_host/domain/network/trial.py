"""The network trial's record and its decisions (network.md, "The trial"). Pure.

The trial record (`<state>/network/trial.json`, schemas/network-trial.schema.json) is written
before every change of /etc/netplan. Its `stage` is the last step that was *begun*, so after a
crash anywhere the record says enough to end in the old configuration or the confirmed new one:
- any stage but `confirmed`, with no outcome: the change may be (partly) in place → restore the
  backup (the deadline rollback, the boot recovery, or the tick after a lost boot recovery);
- `confirmed`: the new configuration was accepted → only the cleanup is left.
An outcome ends the trial; the tick carries it into the operation (RolledBack, Succeeded,
Failed) and then removes the record.

Deadlines within the boot use CLOCK_BOOTTIME (an NTP step cannot move them); a record from an
earlier boot is past every deadline by definition (the boot recovery restores it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from magicstick_host.domain.network.capability import NetworkInventory
from magicstick_host.domain.network.evidence import MANAGED_NETPLAN_NAME
from magicstick_host.domain.text import clip_message
from magicstick_host.lite_dataclasses import dataclass, replace

if TYPE_CHECKING:
    from typing import Any

TRIAL_SCHEMA_VERSION = 1
STAGES = ("backed-up", "writing", "generating", "applying", "awaiting", "confirmed",
          "rolling-back")
CONFIRMATION_S = 180.0
# the timer may fire a moment before the recorded deadline (it is armed just before it)
DEADLINE_TOLERANCE_S = 2.0
NO_PROGRESS_S = 7 * 60.0


def rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class BackedUpFile:
    name: str
    sha256: str
    mode: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "sha256": self.sha256, "mode": self.mode}


@dataclass(frozen=True)
class Deadline:
    boot_id: str
    boottime: float
    wall: str

    def to_json(self) -> dict[str, Any]:
        return {"bootId": self.boot_id, "boottime": self.boottime, "wall": self.wall}


@dataclass(frozen=True)
class TrialRecord:
    request_id: str
    request_uid: str
    interface: str
    boot_id: str
    stage: str
    backup: tuple[BackedUpFile, ...]
    started_at: str
    updated_at: str
    settings: dict[str, Any]  # NetworkSettings.redacted(): never a password
    cluster_addresses: tuple[str, ...] = ()
    managed_sha256: str = ""
    deadline: Deadline | None = None
    outcome: str = ""  # "" | succeeded | rolled-back | failed
    outcome_by: str = ""  # "" | tick | deadline | boot-recovery
    message: str = ""

    @property
    def finished(self) -> bool:
        return bool(self.outcome)

    @property
    def backed_up_names(self) -> frozenset[str]:
        return frozenset(f.name for f in self.backup)

    def to_json(self) -> dict[str, Any]:
        return {
            "schemaVersion": TRIAL_SCHEMA_VERSION,
            "requestId": self.request_id,
            "requestUid": self.request_uid,
            "interface": self.interface,
            "bootId": self.boot_id,
            "stage": self.stage,
            "backup": [f.to_json() for f in self.backup],
            "managedSha256": self.managed_sha256,
            "deadline": self.deadline.to_json() if self.deadline else None,
            "outcome": self.outcome,
            "outcomeBy": self.outcome_by,
            "message": clip_message(self.message),
            "startedAt": self.started_at,
            "updatedAt": self.updated_at,
            "clusterAddresses": list(self.cluster_addresses),
            "settings": self.settings,
        }

    @staticmethod
    def from_json(doc: dict[str, Any]) -> TrialRecord:
        deadline = doc["deadline"]
        return TrialRecord(
            request_id=doc["requestId"],
            request_uid=doc["requestUid"],
            interface=doc["interface"],
            boot_id=doc["bootId"],
            stage=doc["stage"],
            backup=tuple(BackedUpFile(f["name"], f["sha256"], int(f["mode"]))
                         for f in doc["backup"]),
            started_at=doc["startedAt"],
            updated_at=doc["updatedAt"],
            settings=dict(doc["settings"]),
            cluster_addresses=tuple(doc["clusterAddresses"]),
            managed_sha256=doc["managedSha256"],
            deadline=Deadline(deadline["bootId"], float(deadline["boottime"]), deadline["wall"])
            if deadline else None,
            outcome=doc["outcome"],
            outcome_by=doc["outcomeBy"],
            message=doc["message"],
        )


def new_trial(
    *,
    request_id: str,
    request_uid: str,
    settings: dict[str, Any],
    boot_id: str,
    backup: Sequence[BackedUpFile],
    cluster_addresses: Sequence[str],
    wall: datetime,
) -> TrialRecord:
    now = rfc3339(wall)
    return TrialRecord(
        request_id=request_id,
        request_uid=request_uid,
        interface=str(settings["interface"]),
        boot_id=boot_id,
        stage="backed-up",
        backup=tuple(backup),
        started_at=now,
        updated_at=now,
        settings=dict(settings),
        cluster_addresses=tuple(cluster_addresses),
    )


def advance(trial: TrialRecord, stage: str, wall: datetime, **changes: Any) -> TrialRecord:
    if stage not in STAGES:
        raise ValueError(f"unknown trial stage {stage!r}")
    return replace(trial, stage=stage, updated_at=rfc3339(wall), **changes)


def finish(
    trial: TrialRecord, outcome: str, by: str, message: str, wall: datetime
) -> TrialRecord:
    if outcome not in ("succeeded", "rolled-back", "failed"):
        raise ValueError(f"unknown trial outcome {outcome!r}")
    return replace(trial, outcome=outcome, outcome_by=by, message=clip_message(message),
                   updated_at=rfc3339(wall))


def deadline_for(boot_id: str, boottime: float, wall: datetime) -> Deadline:
    return Deadline(boot_id, boottime + CONFIRMATION_S,
                    rfc3339(wall + timedelta(seconds=CONFIRMATION_S)))


def deadline_passed(trial: TrialRecord, *, boot_id: str, boottime: float) -> bool:
    """True once the confirmation window is over: in this boot by CLOCK_BOOTTIME, and always
    for a trial of an earlier boot (a restart ends every window)."""
    if trial.boot_id != boot_id:
        return True
    if trial.deadline is None:
        return False
    if trial.deadline.boot_id != boot_id:
        return True
    return boottime + DEADLINE_TOLERANCE_S >= trial.deadline.boottime


# -- what to do with a trial record --------------------------------------------------------


@dataclass(frozen=True)
class LeaveAlone:
    why: str


DEADLINE_MESSAGE = (
    "The network change was not confirmed before its deadline, so the previous configuration "
    "was restored (netplan generate and apply). Nothing else was changed."
)
UNCERTAIN_APPLY_DEADLINE_MESSAGE = (
    "The network change had no recorded outcome (the worker stopped while applying it with "
    "`netplan apply`) and is never kept, confirmed or not; at its deadline the previous "
    "configuration was restored (netplan generate and apply). Nothing else was changed."
)
BOOT_MESSAGE = (
    "The host restarted during the network trial; the previous configuration was restored "
    "early in boot, before the network started."
)


@dataclass(frozen=True)
class Restore:
    """Bring the backup back. `apply`: also `netplan apply` (a running system); at boot only
    `netplan generate` (the network then starts on the old configuration). `message`: the
    outcome's message once restored."""

    apply: bool
    why: str
    message: str


@dataclass(frozen=True)
class FinishConfirmed:
    """The new configuration was confirmed before a crash: only the cleanup is left."""


TrialAction = LeaveAlone | Restore | FinishConfirmed


def deadline_action(trial: TrialRecord | None, *, boot_id: str, boottime: float) -> TrialAction:
    """The deadline timer fired (`magicstick-host network-rollback`)."""
    if trial is None:
        return LeaveAlone("no network trial is recorded")
    if trial.finished:
        return LeaveAlone(f"the trial of request {trial.request_id} has ended ({trial.outcome})")
    if trial.stage == "confirmed":
        return FinishConfirmed()
    if trial.boot_id != boot_id:
        return LeaveAlone("the trial began in an earlier boot; the boot recovery restores it")
    if not deadline_passed(trial, boot_id=boot_id, boottime=boottime):
        return LeaveAlone("the confirmation deadline has not passed yet")
    if trial.stage == "applying":
        # `netplan apply` began and its outcome was never recorded: never kept
        return Restore(apply=True, why="its apply has no recorded outcome",
                       message=UNCERTAIN_APPLY_DEADLINE_MESSAGE)
    return Restore(apply=True, why="it was not confirmed before the deadline",
                   message=DEADLINE_MESSAGE)


def boot_action(trial: TrialRecord | None, *, boot_id: str) -> TrialAction:
    """Early in boot, before the network starts (`magicstick-host network-recovery`)."""
    if trial is None:
        return LeaveAlone("no network trial is recorded")
    if trial.finished:
        return LeaveAlone(f"the trial of request {trial.request_id} has ended ({trial.outcome})")
    if trial.stage == "confirmed":
        return FinishConfirmed()
    if trial.boot_id == boot_id:
        return LeaveAlone("the trial is running in this boot; it is not a boot recovery")
    return Restore(apply=False, why="the host restarted during the trial", message=BOOT_MESSAGE)


def concurrent_changes(trial: TrialRecord, present: Mapping[str, str]) -> list[str]:
    """Files of /etc/netplan (name → sha256) that neither the backup nor the trial explains:
    someone else changed the configuration meanwhile, so a restore would overwrite it."""
    known = trial.backed_up_names | {MANAGED_NETPLAN_NAME}
    by_name = {f.name: f.sha256 for f in trial.backup}
    unknown = [n for n in sorted(present) if n not in known]
    reappeared = [n for n in sorted(present)
                  if n in by_name and n != MANAGED_NETPLAN_NAME and present[n] != by_name[n]]
    return unknown + reappeared


# -- the checks before Succeeded ---------------------------------------------------------------


def success_problems(
    trial: TrialRecord,
    inventory: NetworkInventory,
    *,
    managed_sha256_now: str | None,
) -> list[str]:
    """What keeps the confirmed trial from being kept (empty: it may be kept)."""
    import ipaddress  # here, not at the top: inspect reads no address (~1.5 ms)

    problems: list[str] = []
    settings = trial.settings
    view = inventory.interface(trial.interface)
    if view is None:
        return [f"{trial.interface} is gone"]
    if not view.ipv4:
        problems.append(f"{trial.interface} has no IPv4 address")
    present = {str(ipaddress.ip_interface(a).ip) for i in inventory.interfaces for a in i.addresses}
    lost = [a for a in trial.cluster_addresses if a not in present]
    if lost:
        problems.append(f"the cluster address {', '.join(lost)} is no longer on this host")
    if settings.get("mode") == "static" and settings.get("address") not in view.ipv4:
        problems.append(f"{trial.interface} does not have the chosen address "
                        f"{settings.get('address')}")
    if settings.get("kind") == "wifi":
        connected = view.wifi.connected_ssid if view.wifi is not None else ""
        if connected != settings.get("ssid"):
            problems.append(f"{trial.interface} is not connected to {settings.get('ssid')!r}")
    if managed_sha256_now != trial.managed_sha256:
        problems.append("the managed netplan file was changed or removed during the trial")
    return problems
