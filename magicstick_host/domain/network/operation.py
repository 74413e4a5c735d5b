"""configure-network and scan-wifi: what the request must be, and the trial's next step.
Pure, and independent of how the operation framework spells its decisions (the operation
modules translate these into the framework's steps and phases).

- `spec_problem`: the per-action intake rules of the HostOperation (networkRef, planId equal
  to the current `network.id`, no experimental flags);
- `consume_secret`: the request Secret read once: the approved settings, or why not, and
  whether to delete the Secret (only the one the request names, with its UID);
- `trial_blocks`: an unfinished trial blocks every new network, power and GPU operation;
- `next_trial_step`: where the configure-network trial goes from its record, the
  confirmation annotation, what the host shows and the clocks.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from magicstick_host.domain.network import trial as trials
from magicstick_host.domain.network.capability import NetworkInventory
from magicstick_host.domain.network.request import (
    NetworkRef,
    RequestSettings,
    SecretProblem,
    network_ref,
    read_request_secret,
)
from magicstick_host.domain.network.settings import (
    NetworkSettings,
    SettingsProblem,
    check_configure_settings,
    check_scan_settings,
)
from magicstick_host.domain.network.trial import TrialRecord
from magicstick_host.lite_dataclasses import dataclass

if TYPE_CHECKING:
    from typing import Any

CONFIGURE, SCAN = "configure-network", "scan-wifi"
NETWORK_ACTIONS = (CONFIGURE, SCAN)
CONFIRMATION_ANNOTATION = "appliance.magicstick.dev/network-confirmed"
HEX64 = re.compile(r"^[0-9a-f]{64}$")
OUTCOME_PHASE = {"succeeded": "Succeeded", "rolled-back": "RolledBack", "failed": "Failed"}


def spec_problem(spec: dict[str, Any], action: str, network: dict[str, Any]) -> str | None:
    """The HostOperation's network fields, checked against the published capability."""
    ref = network_ref(spec, str(spec.get("requestId", "")))
    if isinstance(ref, SecretProblem):
        return ref.message
    if spec.get("allowExperimental") or spec.get("experimentMode"):
        return f"A {action} request must not set the experimental flags."
    plan_id = spec.get("planId")
    if not isinstance(plan_id, str) or not HEX64.match(plan_id):
        return f"A {action} request needs the 64-hex network id it was approved against."
    if plan_id != network.get("id"):
        return ("The network settings of this host changed since they were reviewed (the "
                "network id differs); review them again. Nothing was changed.")
    if action == CONFIGURE and not network.get("supported"):
        return f"Network settings cannot be changed on this host: {network.get('message')}"
    return None


@dataclass(frozen=True)
class SecretConsumed:
    settings: NetworkSettings
    secret_uid: str


@dataclass(frozen=True)
class SecretRefused:
    message: str
    # delete the Secret anyway (it is the one the request names: a password in it must not
    # stay behind); "" when it is not ours to delete (missing, or another UID)
    delete_uid: str = ""


def consume_secret(
    secret: dict[str, Any] | None,
    ref: NetworkRef,
    *,
    action: str,
    request_id: str,
    node_uid: str,
    inventory: NetworkInventory,
) -> SecretConsumed | SecretRefused:
    read = read_request_secret(secret, ref, request_id=request_id, node_uid=node_uid)
    ours = _named_uid(secret, ref)
    if isinstance(read, SecretProblem):
        return SecretRefused(f"{read.message} Nothing was changed.", ours)
    assert isinstance(read, RequestSettings)
    check = (check_configure_settings if action == CONFIGURE else check_scan_settings)(
        read.settings, inventory
    )
    if isinstance(check, SettingsProblem):
        return SecretRefused(f"The network settings were rejected: {check.message} Nothing was "
                             "changed.", ours)
    return SecretConsumed(check, read.secret_uid)


def _named_uid(secret: dict[str, Any] | None, ref: NetworkRef) -> str:
    meta = (secret or {}).get("metadata")
    if not isinstance(meta, dict) or meta.get("name") != ref.name or meta.get("uid") != ref.uid:
        return ""
    return ref.uid


def trial_blocks(trial: TrialRecord | None) -> str | None:
    """An unfinished trial blocks every new network, power or GPU operation."""
    if trial is None or trial.finished:
        return None
    return (f"A network trial is still running on this host (request {trial.request_id}, "
            f"{trial.stage}); network, power and GPU changes wait until it has ended.")


# -- the trial's next step -----------------------------------------------------------------


@dataclass(frozen=True)
class Begin:
    """Back up /etc/netplan and record the trial (nothing changes on the host yet)."""


@dataclass(frozen=True)
class WriteAndGenerate:
    pass


@dataclass(frozen=True)
class ApplyWithDeadline:
    pass


@dataclass(frozen=True)
class AwaitConfirmation:
    message: str
    deadline_wall: str


@dataclass(frozen=True)
class AwaitRollback:
    """`netplan apply` was begun but its outcome was never recorded (the process died in it):
    the change is never kept, so no confirmation is asked for; the deadline restores it."""

    message: str


@dataclass(frozen=True)
class Keep:
    """Confirmed in time and every check holds: the change stays."""


@dataclass(frozen=True)
class RestoreNow:
    apply: bool
    message: str
    # the phase once restored: RolledBack, or Interrupted after 7 minutes without progress
    phase: str = "RolledBack"


@dataclass(frozen=True)
class Ended:
    phase: str
    message: str


@dataclass(frozen=True)
class Stalled:
    message: str


TrialStep = (Begin | WriteAndGenerate | ApplyWithDeadline | AwaitConfirmation | AwaitRollback
             | Keep | RestoreNow | Ended | Stalled)

NO_PROGRESS_MESSAGE = (
    "The network trial made no progress for 7 minutes; the previous configuration was "
    "restored where anything had changed."
)


def next_trial_step(
    trial: TrialRecord | None,
    *,
    request_id: str,
    status_published: bool,
    confirmation: str | None,
    problems: list[str],
    boot_id: str,
    boottime: float,
    idle_s: float,
) -> TrialStep:
    """`problems`: success_problems() of the host now; `idle_s`: seconds since the trial (or
    the operation) last made progress; `confirmation`: the annotation's value, if any."""
    if trial is not None and trial.request_id != request_id:
        return Ended("Failed", f"A network trial of another request ({trial.request_id}) is "
                               "recorded on this host; nothing was changed.")
    if trial is not None and trial.finished:
        return Ended(OUTCOME_PHASE[trial.outcome], trial.message)
    stalled = idle_s >= trials.NO_PROGRESS_S
    if trial is None:
        if stalled:
            return Ended("Interrupted", NO_PROGRESS_MESSAGE + " Nothing had changed.")
        if not status_published:
            # the dashboard must see Applying before anything changes
            return Stalled("Applying: waiting until the status is published before any change.")
        return Begin()
    changed_live = trial.stage in ("applying", "awaiting", "rolling-back")
    if trial.stage == "confirmed":
        return Keep()
    if trial.boot_id != boot_id:
        return RestoreNow(apply=True, message=(
            "The host restarted during the network trial and the boot recovery did not "
            "restore it; the previous configuration was restored now."))
    if trials.deadline_passed(trial, boot_id=boot_id, boottime=boottime) and changed_live:
        if trial.stage == "applying":
            why = UNCERTAIN_APPLY + (", though it was confirmed"
                                     if confirmation == request_id else "")
        elif confirmation == request_id and problems:
            why = "was confirmed, but " + "; ".join(problems)
        else:
            why = "was not confirmed before its deadline"
        return RestoreNow(apply=True, message=f"The network change {why}, so the previous "
                                              "configuration was restored.")
    if trial.stage == "rolling-back":
        return RestoreNow(apply=True, message="The interrupted rollback was finished.")
    if stalled:
        return RestoreNow(apply=changed_live, message=NO_PROGRESS_MESSAGE, phase="Interrupted")
    if trial.stage in ("backed-up", "writing"):
        return WriteAndGenerate()
    if trial.stage == "generating":
        return ApplyWithDeadline()
    if trial.stage == "applying":
        # apply was begun but its outcome is not recorded (the process died in it): the
        # deadline brings the old configuration back; never apply again, never keep it
        return AwaitRollback(uncertain_apply_message(trial, confirmed=confirmation == request_id))
    assert trial.stage == "awaiting"
    if confirmation == request_id and not problems:
        return Keep()
    return AwaitConfirmation(_awaiting(trial, problems, confirmation, request_id),
                             trial.deadline.wall if trial.deadline else "")


UNCERTAIN_APPLY = ("had no recorded outcome (the worker stopped while applying it with "
                   "`netplan apply`) and is never kept")


def uncertain_apply_message(trial: TrialRecord, *, confirmed: bool) -> str:
    """While an apply without a recorded outcome waits for its rollback (network.md)."""
    deadline = trial.deadline.wall if trial.deadline else "its deadline"
    said = " The confirmation was received, but it cannot keep this change." if confirmed else ""
    return (f"The worker stopped while applying the network change (`netplan apply`), so its "
            f"outcome is unknown: the change will be rolled back at {deadline}; a confirmation "
            f"cannot keep it.{said} Create a new request afterwards if it is still wanted.")


def _awaiting(trial: TrialRecord, problems: list[str], confirmation: str | None,
              request_id: str) -> str:
    deadline = trial.deadline.wall if trial.deadline else "its deadline"
    if confirmation == request_id and problems:
        return (f"Confirmed, but {'; '.join(problems)}. The change is kept only if that "
                f"clears before {deadline}; otherwise the previous configuration comes back.")
    return (f"The new network settings are active. Confirm them before {deadline}, or the "
            "previous configuration comes back by itself.")
