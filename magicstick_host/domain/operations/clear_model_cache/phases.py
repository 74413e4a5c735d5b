"""clear-model-cache, phase by phase (model-cache.md, "The operation", steps 2-4).

Accepted → Preparing: the caches walked again and every check of intake repeated on fresh
facts (on a tick that cannot read the Node, it waits: the id names the Node); the entries to
delete are fixed then. Applying: one entry per tick, with the blockers
and the mount table (a fresh walk) looked at before each; a blocker stops it with the rest
kept. A deletion whose outcome was never recorded is never resumed (classify).
"""

from __future__ import annotations

from magicstick_host.domain.decisions import (
    ClassifiedStep,
    Decision,
    RunStep,
    SetPhase,
    Situation,
    Wait,
)
from magicstick_host.domain.model_cache.capability import BLOCKED_MESSAGE, about_gib
from magicstick_host.domain.model_cache.cleanup import (
    CleanupEntry,
    DeleteNext,
    interrupted_message,
    kept_in_sweeps,
    kept_note,
    kept_summary,
    next_batch,
    next_step,
    plan_entries,
    succeeded_message,
)
from magicstick_host.domain.model_cache.inventory import (
    CACHE_ROOTS_BY_ID,
    HUGGINGFACE,
    SHARED_BLOBS,
)
from magicstick_host.domain.operations.clear_model_cache.data import (
    CleanupData,
    data_of,
    planned,
    remaining_entries,
)
from magicstick_host.domain.operations.clear_model_cache.declared import DELETE_STEP, SWEEP_STEP
from magicstick_host.domain.operations.clear_model_cache.request import facts_of
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.state import Operation
from magicstick_host.lite_dataclasses import replace

NOTHING_DELETED = "Nothing was deleted."
WAIT_FRESH = "Waiting for a fresh look at the model caches and the model deployments."
WAIT_KUBERNETES = ("Waiting for Kubernetes: the model caches are checked against this host's "
                   "Node and its model deployments before anything is deleted.")
ASK_AGAIN = "review the Model cache page again and ask again."
TAMPERED = ("The recorded cleanup names an entry that is not a model-cache entry; the "
            "cleanup stopped and the remaining cache files were kept.")


def accepted(op: Operation, now: Situation) -> Decision:
    return SetPhase(Phase.PREPARING, "Checking the model caches again before anything is "
                    "deleted.")


def preparing(op: Operation, now: Situation) -> Decision:
    facts = facts_of(now.capabilities)
    if facts is None or not facts.fresh:
        return Wait(WAIT_FRESH)
    data, inventory, blockers = data_of(op), facts.inventory, facts.blockers
    if not inventory.trusted:
        return SetPhase(Phase.FAILED, f"The model caches cannot be checked safely: "
                        f"{inventory.problem}. {NOTHING_DELETED}")
    if not facts.node_uid:
        # this tick could not read the Node (nor the workloads): the id it computed names no
        # Node, so it says nothing about the caches; nothing has been done yet, so wait
        return Wait(WAIT_KUBERNETES)
    if facts.section.get("id") != op.plan_id:
        return SetPhase(Phase.FAILED, id_differs(data.node_uid, facts.node_uid))
    if blockers.error:
        return SetPhase(Phase.FAILED, f"The cleanup cannot start: {blockers.summary()}, so it "
                        f"cannot be told whether a model is using the caches. {NOTHING_DELETED}")
    if blockers.found:
        return SetPhase(Phase.FAILED, f"{BLOCKED_MESSAGE} Blocking: {blockers.summary()}. "
                        f"{NOTHING_DELETED}")
    entries = plan_entries(inventory)
    if not entries:
        return SetPhase(Phase.SUCCEEDED, f"The model caches were already empty. "
                        f"{NOTHING_DELETED}")
    total = sum(e.bytes for e in entries)
    blobs = sum(1 for e in entries if e.cache == SHARED_BLOBS)
    top = len(entries) - blobs
    what = f"{top} model-cache {'entry' if top == 1 else 'entries'}"
    if blobs:  # deleted in batches once the models are gone, not one per tick
        what += f" and {blobs} shared {'blob' if blobs == 1 else 'blobs'} only they used"
    return SetPhase(
        Phase.APPLYING,
        f"Deleting {what} ({about_gib(total)}), one step at a time.",
        data=replace(data, planned=True, remaining=planned(entries)),
    )


def id_differs(accepted_node_uid: str, node_uid: str) -> str:
    """What is known when this tick's id is not the reviewed one. The id names the Node's UID
    and the roots' identities, and intake compared it under the UID recorded then: the same
    UID now leaves the roots (one created, removed or replaced, which of these is not known)."""
    if accepted_node_uid and node_uid != accepted_node_uid:
        return ("This host's Node changed since the model caches were reviewed (its UID "
                f"differs: it was registered again); {ASK_AGAIN} {NOTHING_DELETED}")
    return ("The model caches changed since they were reviewed (a cache directory's identity "
            f"differs); {ASK_AGAIN} {NOTHING_DELETED}")


def applying(op: Operation, now: Situation) -> Decision:
    facts = facts_of(now.capabilities)
    if facts is None or not facts.fresh:
        return Wait(WAIT_FRESH)
    data = data_of(op)
    remaining = remaining_entries(data)
    if remaining is None:
        return SetPhase(Phase.FAILED, TAMPERED)
    step = next_step(
        remaining,
        blockers=facts.blockers,
        mount_problem=facts.inventory.problem,
        freed=data.freed_bytes,
    )
    if not isinstance(step, DeleteNext):
        if step.phase == Phase.SUCCEEDED.value:
            return SetPhase(Phase.SUCCEEDED, finished_message(op, data.freed_bytes))
        return SetPhase(Phase(step.phase), step.message)
    if step.entry.cache == SHARED_BLOBS:
        return sweep(data, remaining)
    entry = step.entry
    left = remaining[1:]
    freed = data.freed_bytes + entry.bytes
    after = f"{len(left)} left" if left else "none left"
    return RunStep(
        step=DELETE_STEP,
        inputs={
            "cache": entry.cache,
            "root": CACHE_ROOTS_BY_ID[entry.cache].path,
            "entry": entry.name,
            "rootIdentity": list(entry.root_identity),
        },
        phase_on_done=Phase.APPLYING,
        message_on_done=(f"Deleted {entry.path} ({after}; {about_gib(freed)} freed so "
                         "far)."),
        # the effect's reason is appended
        message_on_failure=(f"Deleting {entry.path} stopped; remaining cache files were kept. "
                            f"{kept_summary(remaining, data.freed_bytes)} Reason:"),
        data_on_done=replace(data, remaining=list(data.remaining[1:]), deleted=data.deleted + 1,
                             freed_bytes=freed),
    )


def sweep(data: CleanupData, remaining: tuple[CleanupEntry, ...]) -> RunStep:
    """One batch of shared-store payloads, each deleted with its manifest under the library's
    lock (the effect keeps and counts a locked one or one in use again)."""
    batch = next_batch(remaining)
    left = remaining[len(batch):]
    planned_bytes = sum(e.bytes for e in batch)
    freed = data.freed_bytes + planned_bytes
    after = f"{len(left)} entries left" if left else "none left"
    return RunStep(
        step=SWEEP_STEP,
        inputs={
            "root": HUGGINGFACE.path,
            "rootIdentity": list(batch[0].root_identity),
            "blobs": [e.name for e in batch],
        },
        phase_on_done=Phase.APPLYING,
        message_on_done=(f"Swept {len(batch)} shared blobs of {HUGGINGFACE.path} ({after})."),
        message_on_failure=(f"Deleting the shared blobs of {HUGGINGFACE.path} stopped; "
                            f"remaining cache files were kept. "
                            f"{kept_summary(remaining, data.freed_bytes)} Reason:"),
        data_on_done=replace(data, remaining=list(data.remaining[len(batch):]),
                             deleted=data.deleted + len(batch), freed_bytes=freed),
    )


def finished_message(op: Operation, planned_freed: int) -> str:
    """Succeeded: the space freed, less what the sweeps kept (and said why)."""
    kept = kept_in_sweeps([s.detail for s in op.steps
                           if s.name == SWEEP_STEP and s.outcome == "done"])
    kept_bytes = sum(size for _, size in kept.values())
    note = kept_note(kept)
    message = succeeded_message(max(planned_freed - kept_bytes, 0))
    return f"{message} {note}" if note else message


def classify(op: Operation, now: Situation) -> ClassifiedStep | Wait:
    """Found in progress after a crash: the deletion may have happened, partly or wholly; it
    is never resumed, and nothing is deleted again."""
    data = data_of(op)
    remaining = remaining_entries(data)
    step = op.open_step
    assert step is not None
    if not remaining:
        message = TAMPERED
    else:
        message = interrupted_message(remaining[0], remaining, data.freed_bytes)
    return ClassifiedStep(
        "unknown",
        f"{step.name} of {step.inputs.get('entry', 'the shared blobs')!r} has no recorded "
        "outcome",
        SetPhase(Phase.INTERRUPTED, message, outcome="uncertain"),
    )
