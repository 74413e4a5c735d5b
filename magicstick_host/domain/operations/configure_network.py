"""configure-network (network.md, "The trial"): one interface changed as a bounded trial. Pure.

Accepted → `read-network-request` (the Secret read once, checked, deleted) → Applying, and
only once the dashboard can see Applying: `begin-network-trial` (backup, trial record) →
`write-network-config` (the managed file, `netplan generate`) → `apply-network-config`
(deadline recorded, the independent rollback timer armed, `netplan apply`) →
AwaitingConfirmation with status.confirmationDeadline → the annotation
appliance.magicstick.dev/network-confirmed: <requestId> and every check of network.md holds:
`keep-network-config` → Succeeded. Otherwise the previous configuration comes back at the
deadline (the timer, or `restore-network-config` from the tick) → RolledBack; a restart during
the trial → the boot recovery restores it → RolledBack. Unknown new files in /etc/netplan →
Failed ("concurrent local changes"); 7 minutes without progress → Interrupted.

Where the trial goes next is domain/network/operation.py's `next_trial_step`; this module
turns its answer into the framework's steps and phases.
"""

from __future__ import annotations

from datetime import timedelta

from magicstick_host.domain.decisions import (
    ClassifiedStep,
    Decision,
    RunStep,
    SetPhase,
    Situation,
    Wait,
)
from magicstick_host.domain.network.evidence import MANAGED_NETPLAN_FILE
from magicstick_host.domain.network.operation import (
    CONFIGURE,
    OUTCOME_PHASE,
    ApplyWithDeadline,
    AwaitConfirmation,
    AwaitRollback,
    Begin,
    Ended,
    Keep,
    RestoreNow,
    Stalled,
    TrialStep,
    WriteAndGenerate,
    next_trial_step,
    uncertain_apply_message,
)
from magicstick_host.domain.network.trial import (
    CONFIRMATION_S,
    TrialRecord,
    rfc3339,
    success_problems,
)
from magicstick_host.domain.operations import network_common as common
from magicstick_host.domain.operations import offer_rules
from magicstick_host.domain.operations.kind import LegacyRules, OperationKind
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.state import Operation
from magicstick_host.domain.times import parse_time
from magicstick_host.lite_dataclasses import replace

BEGIN_TRIAL = "begin-network-trial"
WRITE_CONFIG = "write-network-config"
APPLY_CONFIG = "apply-network-config"
KEEP_CONFIG = "keep-network-config"
RESTORE_CONFIG = "restore-network-config"
TRIAL_STEPS = frozenset({BEGIN_TRIAL, WRITE_CONFIG, APPLY_CONFIG, KEEP_CONFIG, RESTORE_CONFIG})
APPLYING_MESSAGE = (
    "Applying: the new network settings were checked; the current configuration is backed "
    "up before anything changes."
)


def accepted(op: Operation, now: Situation) -> Decision:
    return common.read_request(op, now, then=Phase.APPLYING, message=APPLYING_MESSAGE)


def in_trial(op: Operation, now: Situation) -> Decision:
    """Applying and AwaitingConfirmation: the trial's next step."""
    trial = common.trial_of(now)
    if trial is None and now.ev.boot_id != op.accepted_boot_id:
        # a restart before the trial began: the request was approved for the boot that ended
        return SetPhase(Phase.INTERRUPTED, "The host restarted before the network change "
                                           "began; nothing was changed. Create a new request "
                                           "if it is still wanted.")
    step = next_trial_step(
        trial,
        request_id=op.request_id,
        status_published=common.status_published(op, now, Phase.APPLYING),
        confirmation=common.confirmation(op, now),
        problems=_problems(trial, now),
        boot_id=now.ev.boot_id or "",
        boottime=now.boottime,
        idle_s=_idle_s(op, trial, now),
    )
    return _decision(step, op, trial, now)


def _decision(step: TrialStep, op: Operation, trial: TrialRecord | None,
              now: Situation) -> Decision:
    if isinstance(step, Begin):
        changed = common.changed_since_review(op, now)
        inventory = common.inventory_of(now)
        if changed is not None:
            return changed
        if inventory is None:
            return Wait("Applying: waiting until the network can be read.")
        return _run(BEGIN_TRIAL, {"requestId": op.request_id, "requestUid": op.request_uid,
                                  "bootId": now.ev.boot_id or "",
                                  "clusterAddresses": list(inventory.cluster_addresses)},
                    Phase.APPLYING, "Applying: the current netplan files were backed up.")
    if isinstance(step, WriteAndGenerate):
        return _run(WRITE_CONFIG, {"requestId": op.request_id}, Phase.APPLYING,
                    "Applying: the new configuration was written and netplan accepted it.")
    if isinstance(step, ApplyWithDeadline):
        wall = rfc3339(now.wall + timedelta(seconds=CONFIRMATION_S))
        return _run(
            APPLY_CONFIG,
            {"requestId": op.request_id, "bootId": now.ev.boot_id or "",
             "deadlineBoottime": now.boottime + CONFIRMATION_S, "deadlineWall": wall},
            Phase.AWAITING_CONFIRMATION,
            f"The new network settings are active. Confirm them before {wall}, or the "
            "previous configuration comes back by itself.",
            data=replace(common.data_of(op), confirmation_deadline=wall),
        )
    if isinstance(step, AwaitConfirmation):
        if op.phase != Phase.AWAITING_CONFIRMATION:
            return SetPhase(Phase.AWAITING_CONFIRMATION, step.message,
                            data=replace(common.data_of(op),
                                         confirmation_deadline=step.deadline_wall))
        return Wait(step.message)
    if isinstance(step, AwaitRollback):
        # never AwaitingConfirmation (nor its deadline): a confirmation cannot keep this change
        if op.phase != Phase.APPLYING:
            return SetPhase(Phase.APPLYING, step.message)
        return Wait(step.message)
    if isinstance(step, Keep):
        return _run(KEEP_CONFIG, {"requestId": op.request_id}, Phase.SUCCEEDED,
                    "The network change was confirmed and kept.")
    if isinstance(step, RestoreNow):
        return _run(RESTORE_CONFIG, {"requestId": op.request_id, "apply": step.apply,
                                     "message": step.message},
                    Phase(step.phase), step.message)
    if isinstance(step, Ended):
        return SetPhase(Phase(step.phase), step.message)
    assert isinstance(step, Stalled)
    return Wait(step.message)


def _run(step: str, inputs: dict[str, object], then: Phase, message: str,
         data: common.NetworkData | None = None) -> RunStep:
    return RunStep(step=step, inputs=dict(inputs), phase_on_done=then, message_on_done=message,
                   message_on_failure="", data_on_done=data)


def _problems(trial: TrialRecord | None, now: Situation) -> list[str]:
    """What keeps a confirmed trial from being kept; unknown network: a problem too."""
    inventory = common.inventory_of(now)
    if trial is None:
        return []
    if inventory is None or not now.cluster.ok:
        return ["the host's network or its Node cannot be read right now"]
    return success_problems(trial, inventory, managed_sha256_now=_managed_sha256(now))


def _managed_sha256(now: Situation) -> str | None:
    files = now.ev.network.netplan_files if now.ev.network is not None else None
    found = [f for f in files or () if f.path == MANAGED_NETPLAN_FILE]
    return found[0].sha256 or None if found else None


def _idle_s(op: Operation, trial: TrialRecord | None, now: Situation) -> float:
    """Seconds since the operation or its trial last moved."""
    stamps = [parse_time(op.updated_at), parse_time(trial.updated_at) if trial else None]
    last = max((s for s in stamps if s is not None), default=None)
    return (now.wall - last).total_seconds() if last is not None else 0.0


def classify(op: Operation, now: Situation) -> ClassifiedStep | Wait:
    """A step without outcome: the trial record says how far it got (each step records its
    stage before its effect), so the trial goes on from there and never applies twice."""
    step = op.open_step
    assert step is not None
    if step.name == common.READ_REQUEST:
        return common.classify_reading(op, now, then=Phase.APPLYING, message=APPLYING_MESSAGE)
    trial = common.trial_of(now)
    if trial is None or trial.request_id != op.request_id:
        return ClassifiedStep("unknown", "no trial record: nothing was changed",
                              SetPhase(Phase.APPLYING, APPLYING_MESSAGE))
    if trial.finished:
        return ClassifiedStep("classified-done", f"the trial ended ({trial.outcome})",
                              SetPhase(Phase(OUTCOME_PHASE[trial.outcome]), trial.message))
    if trial.stage in ("backed-up", "writing", "generating"):
        return ClassifiedStep("unknown", f"the trial stopped at {trial.stage}; nothing applied",
                              SetPhase(Phase.APPLYING, APPLYING_MESSAGE))
    if trial.stage == "applying":
        # `netplan apply` was begun and its outcome never recorded: rolled back at the deadline
        message = uncertain_apply_message(
            trial, confirmed=common.confirmation(op, now) == op.request_id)
        return ClassifiedStep("unknown", "the worker stopped during netplan apply; the change "
                                         "is never kept and never applied again",
                              SetPhase(Phase.APPLYING, message))
    deadline = trial.deadline.wall if trial.deadline else ""
    return ClassifiedStep(
        "unknown",
        f"the trial stopped at {trial.stage}; it is never applied again",
        SetPhase(Phase.AWAITING_CONFIRMATION,
                 f"The worker stopped during the network change; confirm it before {deadline}, "
                 "or the previous configuration comes back by itself.",
                 data=replace(common.data_of(op), confirmation_deadline=deadline)),
    )


CONFIGURE_NETWORK = OperationKind(
    action=CONFIGURE,
    request_fields=common.REQUEST_FIELDS,
    check_request=common.checker(CONFIGURE),
    offered=offer_rules.configure_network,
    reads=(),
    data=common.NetworkData,
    start=common.start,
    phases={
        Phase.ACCEPTED: accepted,
        Phase.APPLYING: in_trial,
        Phase.AWAITING_CONFIRMATION: in_trial,
    },
    classify=classify,
    restart_budget=0,
    steps=frozenset({common.READ_REQUEST}) | TRIAL_STEPS,
    legacy=LegacyRules(data=common.legacy_data, resumes={}),
)
