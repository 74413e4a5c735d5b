"""The clear-model-cache operation's decisions, phase by phase, as pure functions of the
Situation (domain/operations/clear_model_cache/): intake, Preparing, Applying, classify."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from magicstick_host.domain.decisions import ClassifiedStep, RunStep, SetPhase, Situation, Wait
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.limits import DEFAULT_LIMITS
from magicstick_host.domain.model_cache.blockers import Blockers
from magicstick_host.domain.model_cache.capability import (
    BLOCKED_MESSAGE,
    MODEL_CACHE_FACTS,
    ModelCacheFacts,
    model_cache_section,
)
from magicstick_host.domain.model_cache.cleanup import MODEL_STARTED
from magicstick_host.domain.model_cache.inventory import (
    CacheEntry,
    CacheInventory,
    RootInventory,
)
from magicstick_host.domain.operations.clear_model_cache import CLEAR_MODEL_CACHE, phases
from magicstick_host.domain.operations.clear_model_cache.data import CleanupData, PlannedEntry
from magicstick_host.domain.operations.decide import decide
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.request import HostFacts
from magicstick_host.domain.state import Operation, Step
from tests.harness.factories import operation

BOOT = "11111111-1111-4111-8111-111111111111"
MIB = 1024**2
HUB_ID, OLLAMA_ID = (2049, 100), (2049, 200)


def inventory(problem: str = "", hub: tuple[int, int] = HUB_ID) -> CacheInventory:
    return CacheInventory((
        RootInventory("huggingface", hub, 600 * MIB, (
            CacheEntry("models--a", 500 * MIB, True), CacheEntry("token", 4096, False))),
        RootInventory("ollama", OLLAMA_ID, 300 * MIB, (
            CacheEntry("blobs", 200 * MIB, True), CacheEntry("manifests", 4096, True),
            CacheEntry("keep-me.txt", 4096, False))),
    ), 100 * 1024 * MIB, 10 * 1024 * MIB, problem=problem)


def facts(inv: CacheInventory | None = None, blockers: Blockers | None = None,
          fresh: bool = True, node_uid: str = "uid-1") -> ModelCacheFacts:
    inv, blockers = inv or inventory(), blockers or Blockers()
    return ModelCacheFacts(inv, blockers, model_cache_section(inv, blockers, node_uid=node_uid),
                           fresh, node_uid)


def at(f: ModelCacheFacts | None) -> Situation:
    caps: dict[str, Any] = {} if f is None else {"modelCache": f.section, MODEL_CACHE_FACTS: f}
    return Situation(ev=Evidence(boot_id=BOOT), wall=datetime(2026, 11, 30, 12, tzinfo=UTC),
                     boottime=200.0, limits=DEFAULT_LIMITS, capabilities=caps)


def op(phase: Phase, data: CleanupData | None = None, **changes: Any) -> Operation:
    return operation("clear-model-cache", phase, boot_id=BOOT, reboot_budget=0,
                     plan_id=facts().section["id"], data=data or CleanupData("uid-1"), **changes)


def spec(**overrides: Any) -> dict[str, Any]:
    return {"action": "clear-model-cache", "planId": facts().section["id"],
            "allowExperimental": False, "experimentMode": False, **overrides}


def host(f: ModelCacheFacts | None) -> HostFacts:
    caps: dict[str, Any] = {} if f is None else {"modelCache": f.section, MODEL_CACHE_FACTS: f}
    return HostFacts("n", "uid-1", BOOT, datetime(2026, 11, 30, tzinfo=UTC), False, caps)


# -- intake -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("request_spec", "seen", "needle"), [
    (spec(planId=""), facts(), "64-hex plan id"),
    (spec(planId="0" * 64), facts(), "changed since they were reviewed"),
    (spec(allowExperimental=True), facts(), "must not set the experimental flags"),
    (spec(allowExperimental=True, experimentMode=True), facts(), "experimental flags"),
    (spec(), facts(blockers=Blockers(found=("KubeAI Model a/b",))), BLOCKED_MESSAGE),
    (spec(), facts(blockers=Blockers(error="HTTP 403")), "not available"),
    (spec(), facts(inventory("a separate filesystem is mounted at /x")), "not available"),
    (spec(), facts(fresh=False), "could not be checked"),
    (spec(), None, "could not be checked"),
])
def test_intake_rejects(request_spec: dict[str, Any], seen: ModelCacheFacts | None,
                        needle: str) -> None:
    problem = CLEAR_MODEL_CACHE.check_request(request_spec, host(seen), DEFAULT_LIMITS)
    assert problem is not None and needle in problem


def test_intake_names_the_blockers_and_says_nothing_was_deleted() -> None:
    seen = facts(blockers=Blockers(found=("KubeAI Model a/b", "model Pod c/d")))
    problem = CLEAR_MODEL_CACHE.check_request(spec(), host(seen), DEFAULT_LIMITS)
    assert problem == (f"{BLOCKED_MESSAGE} Blocking: KubeAI Model a/b, model Pod c/d. "
                       "Nothing was deleted.")


def test_an_empty_cache_is_already_empty() -> None:
    empty = CacheInventory((RootInventory("huggingface", HUB_ID),
                            RootInventory("ollama", None)), 1, 1)
    seen = facts(empty)
    problem = CLEAR_MODEL_CACHE.check_request(spec(planId=seen.section["id"]), host(seen),
                                              DEFAULT_LIMITS)
    assert problem is not None and "already empty" in problem
    assert not CLEAR_MODEL_CACHE.offered(Evidence(), {"modelCache": seen.section})


def test_intake_accepts_and_the_report_offers() -> None:
    assert CLEAR_MODEL_CACHE.check_request(spec(), host(facts()), DEFAULT_LIMITS) is None
    assert CLEAR_MODEL_CACHE.offered(Evidence(), {"modelCache": facts().section})


# -- Preparing ---------------------------------------------------------------------------------

def test_preparing_fixes_the_entries_in_deletion_order() -> None:
    decision = decide(CLEAR_MODEL_CACHE, op(Phase.PREPARING), at(facts()))
    assert isinstance(decision, SetPhase) and decision.phase == Phase.APPLYING
    data = decision.data
    assert isinstance(data, CleanupData) and data.planned
    assert [(p.cache, p.name) for p in data.remaining] == [
        ("huggingface", "models--a"), ("ollama", "manifests"), ("ollama", "blobs")]
    assert (data.remaining[0].root_dev, data.remaining[0].root_ino) == HUB_ID
    assert "3 model-cache entries" in decision.message


@pytest.mark.parametrize(("seen", "needle"), [
    (facts(blockers=Blockers(found=("ModelActivation a/b",))), BLOCKED_MESSAGE),
    (facts(blockers=Blockers(error="HTTP 500")), "cannot be told"),
    (facts(inventory("too many files")), "cannot be checked safely"),
    (facts(inventory(hub=(2049, 999))), "changed since they were reviewed"),
])
def test_preparing_fails_with_nothing_deleted(seen: ModelCacheFacts, needle: str) -> None:
    decision = decide(CLEAR_MODEL_CACHE, op(Phase.PREPARING), at(seen))
    assert isinstance(decision, SetPhase) and decision.phase == Phase.FAILED
    assert needle in decision.message and "Nothing was deleted." in decision.message


def test_a_replaced_root_is_said_as_what_is_known() -> None:
    decision = decide(CLEAR_MODEL_CACHE, op(Phase.PREPARING), at(facts(inventory(hub=(2049, 9)))))
    assert isinstance(decision, SetPhase) and decision.phase == Phase.FAILED
    assert decision.message == (
        "The model caches changed since they were reviewed (a cache directory's identity "
        "differs); review the Model cache page again and ask again. Nothing was deleted.")


def test_a_node_registered_again_is_named_as_such() -> None:
    decision = decide(CLEAR_MODEL_CACHE, op(Phase.PREPARING), at(facts(node_uid="uid-2")))
    assert isinstance(decision, SetPhase) and decision.phase == Phase.FAILED
    assert "Node changed" in decision.message and "UID differs" in decision.message
    assert "cache directory" not in decision.message and "Nothing was deleted." in decision.message


@pytest.mark.parametrize("blockers", [Blockers(), Blockers(error="no route to host")])
def test_preparing_without_the_node_waits_whatever_the_caches_show(blockers: Blockers) -> None:
    """The soak's "a cache directory was replaced": a Preparing tick that could not read the
    Node computed the id without its UID. Nothing is compared, nothing is decided."""
    for seen in (facts(node_uid="", blockers=blockers),
                 facts(inventory(hub=(2049, 9)), blockers, node_uid="")):
        decision = decide(CLEAR_MODEL_CACHE, op(Phase.PREPARING), at(seen))
        assert isinstance(decision, Wait) and "Kubernetes" in decision.message


@pytest.mark.parametrize("phase", [Phase.PREPARING, Phase.APPLYING])
def test_without_fresh_facts_it_waits(phase: Phase) -> None:
    assert isinstance(decide(CLEAR_MODEL_CACHE, op(phase), at(facts(fresh=False))), Wait)
    assert isinstance(decide(CLEAR_MODEL_CACHE, op(phase), at(None)), Wait)


# -- Applying ---------------------------------------------------------------------------------

PLANNED = CleanupData("uid-1", True, [
    PlannedEntry("huggingface", "models--a", *HUB_ID, 500 * MIB),
    PlannedEntry("ollama", "blobs", *OLLAMA_ID, 200 * MIB),
])


def test_applying_deletes_the_next_entry_and_counts_it() -> None:
    decision = decide(CLEAR_MODEL_CACHE, op(Phase.APPLYING, PLANNED), at(facts()))
    assert isinstance(decision, RunStep) and decision.step == phases.DELETE_STEP
    assert decision.inputs == {"cache": "huggingface", "root": "/root/.cache/huggingface/hub",
                               "entry": "models--a", "rootIdentity": list(HUB_ID)}
    assert decision.phase_on_done == Phase.APPLYING
    done = decision.data_on_done
    assert isinstance(done, CleanupData)
    assert [p.name for p in done.remaining] == ["blobs"]
    assert (done.deleted, done.freed_bytes) == (1, 500 * MIB)
    assert decision.data_on_failure is None  # the record stays as it was


def test_applying_succeeds_with_the_space_freed() -> None:
    finished = replace(PLANNED, remaining=[], deleted=2, freed_bytes=700 * MIB)
    decision = decide(CLEAR_MODEL_CACHE, op(Phase.APPLYING, finished), at(facts()))
    assert isinstance(decision, SetPhase) and decision.phase == Phase.SUCCEEDED
    assert decision.message == "The model caches were cleared: about 0.7 GiB was freed."


def test_a_blocker_between_two_entries_keeps_the_rest() -> None:
    halfway = replace(PLANNED, remaining=PLANNED.remaining[1:], deleted=1, freed_bytes=500 * MIB)
    seen = facts(blockers=Blockers(found=("model Pod ai/qwen",)))
    decision = decide(CLEAR_MODEL_CACHE, op(Phase.APPLYING, halfway), at(seen))
    assert isinstance(decision, SetPhase) and decision.phase == Phase.FAILED
    assert decision.message.startswith(MODEL_STARTED)
    assert "model Pod ai/qwen" in decision.message and "1 cache entry" in decision.message


def test_a_mount_appearing_stops_the_cleanup() -> None:
    seen = facts(inventory("a separate filesystem is mounted at /root/.ollama/models/blobs"))
    decision = decide(CLEAR_MODEL_CACHE, op(Phase.APPLYING, PLANNED), at(seen))
    assert isinstance(decision, SetPhase) and decision.phase == Phase.FAILED
    assert "Remaining cache files were kept" in decision.message


def test_a_tampered_record_deletes_nothing() -> None:
    tampered = replace(PLANNED, remaining=[PlannedEntry("huggingface", "token", *HUB_ID, 1)])
    decision = decide(CLEAR_MODEL_CACHE, op(Phase.APPLYING, tampered), at(facts()))
    assert isinstance(decision, SetPhase) and decision.phase == Phase.FAILED


# -- after a crash ------------------------------------------------------------------------------

def test_a_deletion_without_outcome_is_interrupted_never_resumed() -> None:
    open_step = Step(phases.DELETE_STEP, {"entry": "models--a"}, BOOT, "t", 100.0)
    running = op(Phase.APPLYING, PLANNED, steps=(open_step,))
    decision = decide(CLEAR_MODEL_CACHE, running, at(facts()))
    assert isinstance(decision, ClassifiedStep) and decision.outcome == "unknown"
    assert decision.then.phase == Phase.INTERRUPTED and decision.then.outcome == "uncertain"
    assert "not resumed" in decision.then.message
    assert "/root/.cache/huggingface/hub/models--a" in decision.then.message


# -- the shared blob store (issue 25) --------------------------------------------------------

SHARED = [PlannedEntry("huggingface-shared", c * 64, *HUB_ID, 100 * MIB) for c in "ab"]


def test_applying_sweeps_the_shared_blobs_in_one_batch() -> None:
    data = replace(PLANNED, remaining=[*SHARED, PLANNED.remaining[-1]])
    decision = decide(CLEAR_MODEL_CACHE, op(Phase.APPLYING, data), at(facts()))
    assert isinstance(decision, RunStep) and decision.step == "sweep-shared-blobs"
    assert decision.inputs == {"root": "/root/.cache/huggingface/hub",
                               "rootIdentity": list(HUB_ID), "blobs": ["a" * 64, "b" * 64]}
    done = decision.data_on_done
    assert isinstance(done, CleanupData) and [p.name for p in done.remaining] == ["blobs"]
    assert done.freed_bytes == PLANNED.freed_bytes + 200 * MIB


def test_the_final_message_says_a_locked_blob_was_kept_and_not_freed() -> None:
    from magicstick_host.domain.model_cache.cleanup import sweep_detail

    swept = Step("sweep-shared-blobs", {"blobs": ["a" * 64, "b" * 64]}, BOOT, "t", 100.0,
                 outcome="done", detail=sweep_detail(1, 100 * MIB, (1, 100 * MIB), (0, 0)))
    finished = replace(PLANNED, remaining=[], deleted=3, freed_bytes=800 * MIB)
    decision = decide(CLEAR_MODEL_CACHE, op(Phase.APPLYING, finished, steps=(swept,)),
                      at(facts()))
    assert isinstance(decision, SetPhase) and decision.phase == Phase.SUCCEEDED
    assert decision.message.startswith("The model caches were cleared: about 0.7 GiB was freed.")
    assert "1 shared blob(s) (about 0.1 GiB) were kept because another process held their lock" \
        in decision.message


def test_an_interrupted_sweep_is_never_resumed() -> None:
    open_step = Step("sweep-shared-blobs", {"blobs": ["a" * 64]}, BOOT, "t", 100.0)
    running = op(Phase.APPLYING, replace(PLANNED, remaining=SHARED), steps=(open_step,))
    decision = decide(CLEAR_MODEL_CACHE, running, at(facts()))
    assert isinstance(decision, ClassifiedStep) and decision.then.phase == Phase.INTERRUPTED
    assert "the shared blobs in /root/.cache/huggingface/hub/blobs" in decision.then.message
    assert "2 cache entries (about 0.2 GiB) were kept" in decision.then.message


def test_a_tampered_shared_blob_name_deletes_nothing() -> None:
    bad = [PlannedEntry("huggingface-shared", "../../etc", *HUB_ID, 1)]
    decision = decide(CLEAR_MODEL_CACHE, op(Phase.APPLYING, replace(PLANNED, remaining=bad)),
                      at(facts()))
    assert isinstance(decision, SetPhase) and decision.phase == Phase.FAILED
