"""An appliance upgraded from the original worker: its state.json in every phase (fixture files
in tests/fixtures/legacy-state/), loaded, migrated, journaled, then driven by the real tick
against the real apiserver to the end the contract gives ("Upgrading from the original
worker"). None of these clusters has an Appliance object: registration is decided by the
Node's allocatable GPU alone.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magicstick_host.domain.intake import request_digest
from magicstick_host.domain.legacy_state import (
    NOT_RESUMED,
    adopt_request,
    migrate_legacy_state,
)
from magicstick_host.domain.operations.prepare_gpu.handoff import desired_module_spec
from magicstick_host.domain.operations.shutdown_steps import POWEROFF_TEXT, SHUTDOWN_TEXT
from magicstick_host.domain.phase import TERMINAL_PHASES
from magicstick_host.domain.state import State
from magicstick_host.errors import StateCorruptError
from magicstick_host.ports.clock import Instant
from magicstick_host.ports.state_store import FileStateStore
from magicstick_host.sim.runner import SimRunner
from magicstick_host.sim.writer import load_host
from magicstick_host.tick import run_tick
from magicstick_host.tick_result import TickResult
from tests.harness.world import World

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "legacy-state"
NOW = datetime(2026, 5, 9, 7, 10, 0, tzinfo=UTC)  # 600 s after the fixtures' startedAt
BOOTTIME = 500.0
BOOT0 = "8d3f1c2e-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
BOOT1 = "2b4d6f80-1a3c-4e5f-9a7b-8c9d0e1f2a3b"
UID = "6b7e5f0a-3c2d-4e1f-9a8b-7c6d5e4f3a2b"
RID = "c0ffee00c0ffee00c0ffee00c0ffee00"
COMPLETED = ["0f1e2d3c4b5a69788796a5b4c3d2e1f0", "1a2b3c4d5e6f708192a3b4c5d6e7f809"]
OLD_KERNEL = "strix-halo-ubuntu-26.04-old-kernel"
READY = "strix-halo-ubuntu-26.04-ready"
MODULE = "/apis/appliance.magicstick.dev/v1alpha1/namespaces/ai-system/moduleactivations"


def fixture(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return doc


class FixedClock:
    def now(self) -> Instant:
        return Instant(wall=NOW, boottime=BOOTTIME)


def plant(directory: Path, doc: dict[str, Any]) -> Path:
    """Put a legacy state.json where the original worker kept it (0700 directory, 0600 file),
    with none of this worker's files beside it."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    (directory / "journal.jsonl").unlink(missing_ok=True)
    path = directory / "state.json"
    path.write_text(json.dumps(doc, indent=2))
    path.chmod(0o600)
    return path


def migrated(tmp_path: Path, name: str) -> tuple[State, FileStateStore]:
    store = FileStateStore(tmp_path / "state", clock=FixedClock())
    original = plant(store.directory, fixture(name)).read_bytes()
    state = store.load()
    assert state is not None
    # the original is kept beside ours, byte for byte, and the migration is journaled first
    (kept,) = store.directory.glob("state.json.legacy-*")
    assert kept.name == "state.json.legacy-20260509T071000Z"
    assert kept.read_bytes() == original
    (entry,) = store.read_journal()
    assert entry["event"] == "migrated-from-legacy" and entry["seq"] == 1
    assert entry["archived"] == str(kept) and entry["completed"] == 2
    # saved in this worker's format: the next load reads it as it is, no second migration
    assert FileStateStore(store.directory, clock=FixedClock()).load() == state
    assert len(list(store.directory.glob("state.json.legacy-*"))) == 1
    assert len(store.read_journal()) == 1
    return state, store


# ---- the migration itself: a pure function of the legacy document and the clock ------------


def test_completed_request_ids_become_processed_memory(tmp_path: Path) -> None:
    state, _ = migrated(tmp_path, "completed-only.json")
    assert state.operation is None and state.block is None
    assert [(p.request_uid, p.request_id) for p in state.processed] == [("", r) for r in COMPLETED]
    assert all(state.seen_request_id(r) for r in COMPLETED)
    assert state.seen_uid("") is None  # an unknown UID never matches a request


def test_a_terminal_current_is_kept_as_the_last_operation(tmp_path: Path) -> None:
    state, _ = migrated(tmp_path, "terminal-succeeded.json")
    op = state.operation
    assert op is not None and op.terminal and op.phase == "Succeeded"
    assert op.request_uid == UID and op.request_id == RID and op.action == "reboot"
    assert op.message == "The computer restarted (a new boot was observed)."
    assert (op.reboots_used, op.reboot_budget) == (1, 1)
    assert op.accepted_at == "2026-05-09T07:00:00Z"
    assert state.seen_uid(UID) is not None and state.seen_request_id(RID)
    assert len(state.processed) == 3


@pytest.mark.parametrize(
    ("name", "phase", "boot", "since", "reboots", "budget"),
    [
        # the phase clock is the legacy time, in the boot it was recorded in
        ("registering.json", "Registering", BOOT1, BOOTTIME - (600 - 330), 1, 1),
        ("validating.json", "Validating", BOOT0, BOOTTIME - (600 - 30), 0, 1),
        ("reboot-scheduled-reboot.json", "RebootScheduled", BOOT0, BOOTTIME - 595, 1, 1),
        ("poweroff-scheduled.json", "PoweroffScheduled", BOOT0, BOOTTIME - 595, 1, 1),
        ("reboot-scheduled-prepare-gpu.json", "RebootScheduled", BOOT0, BOOTTIME - 480, 1, 1),
        ("reboot-scheduled-memory-uma.json", "RebootScheduled", BOOT0, BOOTTIME - 590, 1, 2),
        ("reboot-scheduled-memory-ttm.json", "RebootScheduled", BOOT1, BOOTTIME - 200, 2, 2),
    ],
)
def test_phases_this_worker_can_prove_continue(
    tmp_path: Path, name: str, phase: str, boot: str, since: float, reboots: int, budget: int
) -> None:
    state, _ = migrated(tmp_path, name)
    op = state.operation
    assert op is not None and op.phase == phase and not op.terminal
    assert (op.phase_boot_id, op.phase_since_boottime) == (boot, since)
    assert (op.reboots_used, op.reboot_budget) == (reboots, budget)
    assert op.steps == () and op.outcome == ""
    # no spec in the legacy file: the first supervise records name and digest
    assert (op.name, op.request_digest) == ("", "")
    assert op.to_json()["data"]["legacy"]["phase"] == phase
    assert state.seen_uid(UID) is not None


def test_prepare_gpu_data_comes_from_the_plan_and_the_recorded_activation(
    tmp_path: Path,
) -> None:
    op = migrated(tmp_path, "registering.json")[0].operation
    assert op is not None
    assert op.plan_id == "9f" * 32
    assert op.to_json()["data"] == {
        "packages": {"linux-generic": "7.0.0-31.31"},
        "targetKernel": "7.0.0-31-generic",
        "rebootRequired": True,
        "gpuProfile": "strix-halo",
        "profileId": "strix-halo-ubuntu-26.04",
        "profileVersion": "1",
        "osVersionId": None,
        "experiment": False,
        "engineValidationAvailable": True,
        "moduleIdentity": None,  # activationBefore null: there was no ModuleActivation
        "installDone": True,
        "evidenceRefresh": None,  # not run yet
        "legacy": {
            "migratedAt": "2026-05-09T07:10:00Z",
            "phase": "Registering",
            "unknown": ["osVersionId"],
        },
    }


def test_memory_data_comes_from_the_selection_and_the_capability(tmp_path: Path) -> None:
    op = migrated(tmp_path, "reboot-scheduled-memory-uma.json")[0].operation
    assert op is not None
    data = dict(op.to_json()["data"])
    assert data.pop("legacy")["unknown"] == ["identity"]
    assert data == {
        "carveoutIndex": 9,
        "dynamicLimitMi": 65536,
        "pciAddress": "0000:c5:00.0",
        "fromCarveoutIndex": 0,
        "options": fixture("reboot-scheduled-memory-uma.json")["current"]["plan"]["options"],
        "newCarveoutMi": 32768,
        "stage": "carveout",
        "carveoutWritten": True,
        "ttmWritten": False,
        "identity": None,
    }
    ttm = migrated(tmp_path / "ttm", "reboot-scheduled-memory-ttm.json")[0].operation
    assert ttm is not None
    written = ttm.to_json()["data"]
    assert (written["stage"], written["carveoutWritten"], written["ttmWritten"]) == (
        "ttm",
        True,
        True,
    )


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("preparing-prepare-gpu.json", ""),
        ("verifying-prepare-gpu.json", ""),
        ("verifying-memory.json", ""),
        ("unknown-phase.json", ""),
        ("unknown-action.json", ""),
        ("registering-without-boot.json", "the boot the registration began in is not recorded"),
    ],
)
def test_anything_else_in_progress_is_interrupted(tmp_path: Path, name: str, why: str) -> None:
    doc = fixture(name)
    state, _ = migrated(tmp_path, name)
    op = state.operation
    assert op is not None and op.phase == "Interrupted" and op.terminal
    assert NOT_RESUMED in op.message and f"phase {doc['current']['phase']}" in op.message
    assert why in op.message
    assert op.outcome == "uncertain" and op.steps == ()
    assert state.seen_uid(UID) is not None


def test_a_scheduled_phase_without_its_boot_is_interrupted() -> None:
    doc = fixture("reboot-scheduled-reboot.json")
    doc["current"]["initialBootId"] = None
    state = migrate_legacy_state(doc, wall=NOW, boottime=BOOTTIME)
    assert state.operation is not None and state.operation.phase == "Interrupted"
    assert "cannot be proven" in state.operation.message


def test_a_future_legacy_time_starts_the_clock_now() -> None:
    doc = fixture("reboot-scheduled-reboot.json")
    doc["current"]["scheduledAt"] = NOW.timestamp() + 86400  # a wrong clock, once
    op = migrate_legacy_state(doc, wall=NOW, boottime=BOOTTIME).operation
    assert op is not None and op.phase_since_boottime == BOOTTIME


def test_processed_memory_is_bounded_and_keeps_the_newest() -> None:
    doc = {"completed": [f"{n:032x}" for n in range(10)], "current": None}
    state = migrate_legacy_state(doc, wall=NOW, boottime=BOOTTIME, keep=4)
    assert [p.request_id for p in state.processed] == [f"{n:032x}" for n in range(6, 10)]


def test_adopt_request_records_name_and_digest_of_the_same_object_only() -> None:
    op = migrate_legacy_state(fixture("registering.json"), wall=NOW, boottime=BOOTTIME).operation
    assert op is not None
    spec = {"action": "prepare-gpu", "requestId": RID}
    same = {"metadata": {"uid": UID, "name": "host-abc"}, "spec": spec}
    adopted = adopt_request(op, same, "host-abc")
    assert adopted.name == "host-abc"
    assert adopted.request_digest == request_digest(UID, spec)
    assert adopt_request(adopted, {**same, "spec": {"other": 1}}, "x") == adopted  # once only
    other = adopt_request(op, {"metadata": {"uid": "another"}, "spec": spec}, "host-abc")
    assert (other.name, other.request_digest) == ("host-abc", "")
    assert adopt_request(op, None, "host-abc").request_digest == ""


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(completed="c0ffee"),
        lambda d: d["completed"].append(7),
        lambda d: d.update(extra=True),
        lambda d: d.pop("current"),
        lambda d: d["current"].update(requestId="NOT-HEX"),
        lambda d: d["current"].update(operationUid="../../etc"),
        lambda d: d["current"].update(scheduledAt="yesterday"),
        lambda d: d["current"].update(memoryStage="both"),
        lambda d: d["current"].pop("phase"),
    ],
    ids=["completed", "item", "extra", "no-current", "request-id", "uid", "time", "stage", "phase"],
)
def test_a_legacy_file_off_its_schema_is_corrupt(tmp_path: Path, mutate: Any) -> None:
    doc = fixture("reboot-scheduled-memory-uma.json")
    mutate(doc)
    store = FileStateStore(tmp_path / "state", clock=FixedClock())
    plant(store.directory, doc)
    with pytest.raises(StateCorruptError, match="legacy state"):
        store.load()
    state = store.load()
    assert state is not None and state.block is not None and state.operation is None
    assert list(store.directory.glob("state.json.corrupt-*"))


def test_a_legacy_file_with_a_duplicate_key_is_corrupt(tmp_path: Path) -> None:
    store = FileStateStore(tmp_path / "state", clock=FixedClock())
    store.prepare()
    store.state_path.write_text('{"completed": [], "current": null, "current": {"phase": "x"}}')
    store.state_path.chmod(0o600)
    with pytest.raises(StateCorruptError, match="duplicate key 'current'"):
        store.load()


# ---- upgraded appliances, driven by the real tick against the real apiserver ---------------


def tick(world: World) -> TickResult:
    """The real tick, with a state store on the world's clock (the migration reads it)."""
    deps = world.deps()
    deps.store = FileStateStore(world.state_dir, clock=world.clock)
    try:
        return run_tick(deps)
    finally:
        world.clock.advance(15)


def drive(world: World, max_ticks: int = 30) -> str:
    for _ in range(max_ticks):
        tick(world)
        if load_host(world.root).shutdown is not None:
            world.boot()
        op = world.state().operation
        if op is not None and op.phase in ("Registering", "Validating"):
            world.registered()
        status = (world.hostop() or {}).get("status") or {}
        if op is not None and op.terminal and status.get("phase") == op.phase:
            return op.phase
    raise AssertionError(f"the operation did not end in {max_ticks} ticks")


def epoch(world: World, ago: float = 0.0) -> float:
    return world.clock.wall.timestamp() - ago


def handed_over(kube: Any, profile: str = "strix-halo") -> None:
    """The original worker's handoff before Registering: ModuleActivation amd-gpu names the
    runtime profile (cluster-wide, so each test sets it afresh)."""
    kube.request("DELETE", f"{MODULE}/amd-gpu")
    body = {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "ModuleActivation",
        "metadata": {"name": "amd-gpu", "namespace": "ai-system"},
        "spec": desired_module_spec(profile),
    }
    code, out = kube.request("POST", MODULE, body)
    assert code == 201, out


def upgrade(world: World, name: str, created: dict[str, Any], **current: Any) -> dict[str, Any]:
    """The original worker's record of `created`, planted as this host's state."""
    doc = fixture(name)
    doc["current"].update(
        operationUid=created["metadata"]["uid"],
        requestId=created["spec"]["requestId"],
        initialBootId=world.boot_id,
        startedAt=epoch(world, 60),
        **current,
    )
    plant(world.state_dir, doc)
    return doc


def phases(world: World) -> list[str]:
    """The phases the journal shows for the current operation, each change once."""
    seen = [e["phase"] for e in world.journal() if e.get("requestUid") == current_uid(world)]
    return [p for i, p in enumerate(seen) if i == 0 or seen[i - 1] != p]


def current_uid(world: World) -> str:
    op = world.state().operation
    return op.request_uid if op else ""


def assert_migrated_first(world: World, legacy_phase: str) -> None:
    journal = world.journal()
    assert journal[0]["event"] == "migrated-from-legacy" and journal[0]["seq"] == 1
    assert journal[0]["legacyPhase"] == legacy_phase
    assert [e["seq"] for e in journal] == list(range(1, len(journal) + 1))  # none missing


def assert_adopted(world: World, created: dict[str, Any]) -> None:
    op = world.state().operation
    assert op is not None
    assert op.name == world.request_name
    assert op.request_digest == request_digest(created["metadata"]["uid"], created["spec"])


def replay_is_rejected(world: World, request_id: str) -> None:
    obj = world.hostop()
    if obj is not None:
        world.kube.delete_hostoperation(world.request_name, obj["metadata"]["uid"])
    world.create_request("reboot", requestId=request_id)
    tick(world)
    status = (world.hostop() or {}).get("status") or {}
    assert status.get("phase") == "Rejected"
    assert "already processed; a replay is never executed" in status["message"]


@pytest.mark.apiserver
def test_completed_ids_stay_rejected_after_the_upgrade(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, READY)
    plant(world.state_dir, fixture("completed-only.json"))
    tick(world)
    assert_migrated_first(world, "")
    replay_is_rejected(world, COMPLETED[0])
    assert world.effects("shutdown") == []
    # the worker is not blocked: a new request runs
    rejected = world.hostop()
    assert rejected is not None
    world.kube.delete_hostoperation(world.request_name, rejected["metadata"]["uid"])
    world.create_request("reboot")
    tick(world)
    assert world.phase() == "RebootScheduled"


@pytest.mark.apiserver
def test_a_terminal_operation_is_kept_and_its_status_mirrored(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, READY)
    created = world.create_request("reboot")
    upgrade(world, "terminal-succeeded.json", created)
    tick(world)
    assert_migrated_first(world, "Succeeded")
    assert world.phase() == "Succeeded"
    assert world.hostop()["status"]["requestId"] == created["spec"]["requestId"]  # type: ignore[index]
    assert world.effects() == []
    replay_is_rejected(world, created["spec"]["requestId"])


@pytest.mark.apiserver
@pytest.mark.parametrize(
    ("name", "boot_key", "since_key"),
    [
        ("registering.json", "registrationBootId", "registrationStartedAt"),
        ("validating.json", "validationBootId", "validationStartedAt"),
    ],
)
def test_registering_and_validating_complete_through_the_registration_checks(
    tmp_path: Path, kube: Any, name: str, boot_key: str, since_key: str
) -> None:
    world = World(tmp_path, kube, READY)  # the driver is ready: only registration is left
    created = world.create_request("prepare-gpu", planId="9f" * 32, allowExperimental=True)
    legacy_phase = fixture(name)["current"]["phase"]
    upgrade(world, name, created, **{boot_key: world.boot_id, since_key: epoch(world, 120)})
    handed_over(kube)
    module_before = kube.request("GET", f"{MODULE}/amd-gpu")
    tick(world)  # no allocatable GPU yet: waits, in the legacy phase
    assert_migrated_first(world, legacy_phase)
    assert_adopted(world, created)
    assert world.phase() == legacy_phase
    world.registered()
    tick(world)
    assert world.phase() == "Succeeded"
    assert "registered (1 amd.com/gpu)" in world.hostop()["status"]["message"]  # type: ignore[index]
    assert world.effects() == []  # no playbook, no restart
    assert kube.request("GET", f"{MODULE}/amd-gpu") == module_before  # nothing handed over again


@pytest.mark.apiserver
def test_registration_keeps_its_legacy_deadline(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, READY)
    created = world.create_request("prepare-gpu", planId="9f" * 32, allowExperimental=True)
    upgrade(
        world,
        "registering.json",
        created,
        registrationBootId=world.boot_id,
        registrationStartedAt=epoch(world, 1000),  # over the 900 s deadline already
    )
    handed_over(kube)
    tick(world)
    assert world.phase() == "Failed"
    assert "did not register within 900 s" in world.hostop()["status"]["message"]  # type: ignore[index]


@pytest.mark.apiserver
def test_registering_after_a_restart_is_interrupted(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, READY)
    created = world.create_request("prepare-gpu", planId="9f" * 32, allowExperimental=True)
    upgrade(world, "registering.json", created, registrationStartedAt=epoch(world, 60))
    # registrationBootId is the fixture's, not this boot: the host restarted since
    tick(world)
    assert world.phase() == "Interrupted"
    assert "restarted during registration" in world.hostop()["status"]["message"]  # type: ignore[index]


@pytest.mark.apiserver
@pytest.mark.parametrize(
    ("action", "name", "mode", "text"),
    [
        ("reboot", "reboot-scheduled-reboot.json", "-r", SHUTDOWN_TEXT),
        ("poweroff", "poweroff-scheduled.json", "-P", POWEROFF_TEXT),
    ],
)
def test_a_scheduled_shutdown_completes_on_the_new_boot(
    tmp_path: Path, kube: Any, action: str, name: str, mode: str, text: str
) -> None:
    world = World(tmp_path, kube, READY)
    created = world.create_request(action)
    SimRunner(world.root).run(["shutdown", mode, "+1", text], timeout=10)  # the original did
    scheduled = fixture(name)["current"]["phase"]
    upgrade(world, name, created, scheduledAt=epoch(world, 5))
    tick(world)  # the same boot: it waits for the restart
    assert_migrated_first(world, scheduled)
    assert world.phase() == scheduled
    world.boot()
    tick(world)
    assert world.phase() == "Succeeded"
    assert len(world.effects("shutdown")) == 1  # the original's, never a second one
    status = world.hostop()["status"]  # type: ignore[index]
    assert status["rebootsUsed"] == 1 and status["rebootBudget"] == 1


@pytest.mark.apiserver
def test_a_scheduled_restart_that_never_came_fails_without_a_second_one(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, READY)
    created = world.create_request("reboot")
    SimRunner(world.root).run(["shutdown", "-r", "+1", SHUTDOWN_TEXT], timeout=10)
    upgrade(world, "reboot-scheduled-reboot.json", created, scheduledAt=epoch(world, 700))
    tick(world)  # the legacy clock says 700 s in the same boot: past the 600 s deadline
    assert world.phase() == "Failed"
    assert "No new boot was observed" in world.hostop()["status"]["message"]  # type: ignore[index]
    assert len(world.effects("shutdown")) == 1


@pytest.mark.apiserver
def test_prepare_gpu_restart_completes_verifying_handoff_and_registration(
    tmp_path: Path, kube: Any
) -> None:
    kube.request("DELETE", f"{MODULE}/amd-gpu")  # cluster-wide: start without one
    world = World(tmp_path, kube, OLD_KERNEL)
    plan = world.published()["plan"]
    created = world.create_request("prepare-gpu", planId=plan["id"], allowExperimental=True)
    while world.phase() != "RebootScheduled":  # the packages and the restart, as the original
        tick(world)
    assert len(world.playbooks("prepare.yml")) == 1 and len(world.effects("shutdown")) == 1
    upgrade(
        world,
        "reboot-scheduled-prepare-gpu.json",
        created,
        plan=plan,
        scheduledAt=epoch(world, 10),
        activationBefore=None,  # there was no ModuleActivation when it began
    )
    assert drive(world) == "Succeeded"
    assert_migrated_first(world, "RebootScheduled")
    assert phases(world) == ["RebootScheduled", "Verifying", "Registering", "Succeeded"]
    assert load_host(world.root).kernel.release == "7.0.0-31-generic"
    assert len(world.playbooks("prepare.yml")) == 1 and len(world.effects("shutdown")) == 1
    code, module = kube.request("GET", f"{MODULE}/amd-gpu")
    # the runtime profile the original approved (its plan's gpuProfile) is what was handed over
    assert code == 200
    assert module["spec"]["parameters"]["compatibilityProfile"] == plan["gpuProfile"]


def memory_to_restart(world: World, restarts: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """configure-gpu-memory 9 / 65536 MiB, run by this worker until its `restarts`-th restart
    is scheduled (the original did the same writes); the request and the capability."""
    cap = world.published()["gpuMemory"]
    created = world.create_request(
        "configure-gpu-memory",
        planId=cap["id"],
        allowExperimental=True,
        gpuMemory={"carveoutIndex": 9, "dynamicLimitMi": 65536},
    )
    for _ in range(40):
        tick(world)
        if load_host(world.root).shutdown is not None:
            if len(world.effects("shutdown")) == restarts:
                return created, cap
            world.boot()
    raise AssertionError("the restart was never scheduled")


@pytest.mark.apiserver
@pytest.mark.parametrize(
    ("name", "restarts", "stage"),
    [
        ("reboot-scheduled-memory-uma.json", 1, "uma"),
        ("reboot-scheduled-memory-ttm.json", 2, "ttm"),
    ],
)
def test_memory_restart_continues_on_the_new_boot_and_never_repeats_a_write(
    tmp_path: Path, kube: Any, name: str, restarts: int, stage: str
) -> None:
    world = World(tmp_path, kube, READY)
    created, cap = memory_to_restart(world, restarts)
    upgrade(
        world, name, created, plan=cap, scheduledAt=epoch(world, 5), stageBootId=world.boot_id
    )
    tick(world)  # the same boot: waits
    assert world.phase() == "RebootScheduled"
    world.boot()
    final = drive(world)
    # the new boot proved the restart: the operation went on to verify it ...
    assert phases(world)[:2] == ["RebootScheduled", "Verifying"]
    # ... and ended without repeating a write or a restart the original did. The host's
    # identity before the restart is unknown to the legacy record (data "identity" None), so
    # the verification checks what it can: bindings, conflicts, the active values.
    assert final == "Succeeded", world.state().operation
    op = world.state().operation
    assert op is not None
    done_before = {"write-carveout"} if stage == "uma" else {"write-carveout", "write-ttm-config"}
    assert not done_before & {s.name for s in op.steps}
    assert len(world.effects("shutdown")) <= 2 and op.reboots_used <= op.reboot_budget == 2
    assert len(world.playbooks("memory.yml")) <= 1


@pytest.mark.apiserver
@pytest.mark.parametrize(
    ("name", "action", "spec"),
    [
        ("preparing-prepare-gpu.json", "prepare-gpu", {"planId": "9f" * 32}),
        ("verifying-prepare-gpu.json", "prepare-gpu", {"planId": "9f" * 32}),
        ("unknown-phase.json", "prepare-gpu", {"planId": "9f" * 32}),
        (
            "verifying-memory.json",
            "configure-gpu-memory",
            {"planId": "7e" * 32, "gpuMemory": {"carveoutIndex": 9, "dynamicLimitMi": 65536}},
        ),
        (
            "unknown-action.json",
            "configure-network",
            {
                "planId": "5d" * 32,
                "networkRef": {"name": "host-network-" + "a" * 32, "uid": "n-1"},
            },
        ),
    ],
)
def test_other_phases_are_interrupted_and_nothing_is_replayed(
    tmp_path: Path, kube: Any, name: str, action: str, spec: dict[str, Any]
) -> None:
    world = World(tmp_path, kube, OLD_KERNEL)
    flags = {"allowExperimental": action != "configure-network"}
    created = world.create_request(action, **spec, **flags)
    upgrade(world, name, created)
    tick(world)
    assert_migrated_first(world, fixture(name)["current"]["phase"])
    assert world.phase() == "Interrupted"
    status = world.hostop()["status"]  # type: ignore[index]
    assert NOT_RESUMED in status["message"] and status["outcome"] == "uncertain"
    for _ in range(3):
        tick(world)
    assert world.effects() == [] and world.phase() == "Interrupted"
    replay_is_rejected(world, created["spec"]["requestId"])


@pytest.mark.apiserver
def test_a_migrated_operation_whose_request_is_gone_stops(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, READY)
    created = world.create_request("reboot")
    SimRunner(world.root).run(["shutdown", "-r", "+1", SHUTDOWN_TEXT], timeout=10)
    upgrade(world, "reboot-scheduled-reboot.json", created, scheduledAt=epoch(world, 5))
    kube.delete_hostoperation(world.request_name, created["metadata"]["uid"])
    tick(world)
    state = world.state()
    assert state.block is not None and state.block.code == "execution-state-removed"
    assert state.operation is not None and state.operation.phase == "Interrupted"
    assert state.operation.name == world.request_name


# ---- property: every file the legacy schema admits migrates to a valid state ----------------

HEX = "0123456789abcdef"
maybe = st.none()
times = (
    maybe
    | st.floats(0, 4e9, allow_nan=False)
    | st.integers(0, 4_000_000_000)
    | st.sampled_from(
        ["2026-05-09T07:00:00Z", "2026-05-09T07:00:00.5+02:00", "1999-01-01T00:00:00Z"]
    )
)
boots = maybe | st.sampled_from([BOOT0, BOOT1, "b"])
objects = maybe | st.dictionaries(
    st.sampled_from(["id", "gpuProfile", "targetKernel", "packages", "experimentMode",
                     "engineValidationAvailable", "options", "pciAddress", "metadata", "spec",
                     "uid", "currentCarveoutIndex", "profileVersion"]),
    st.none() | st.booleans() | st.integers() | st.text(max_size=6)
    | st.lists(st.dictionaries(st.sampled_from(["index", "sizeMi"]), st.integers(), max_size=2),
               max_size=3)
    | st.dictionaries(st.sampled_from(["uid", "a"]), st.text(max_size=4), max_size=2),
    max_size=6,
)
currents = st.fixed_dictionaries(
    {
        "operationUid": st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,20}\Z"),
        "requestId": st.text(HEX, min_size=32, max_size=32),
        "action": st.sampled_from(["reboot", "poweroff", "prepare-gpu", "configure-gpu-memory",
                                   "configure-network", "x"]),
        "phase": st.sampled_from(["Accepted", "Preparing", "RebootScheduled",
                                  "PoweroffScheduled", "Verifying", "Registering", "Validating",
                                  "Succeeded", "Failed", "Interrupted", "Rejected", "Weird"]),
    },
    optional={
        "message": maybe | st.text(max_size=3000),
        "initialBootId": boots,
        "startedAt": times,
        "plan": objects,
        "scheduledAt": times,
        "verifyStartedAt": times,
        "registrationStartedAt": times,
        "registrationBootId": boots,
        "validationStartedAt": times,
        "validationBootId": boots,
        "activationBefore": objects,
        "memoryDesired": maybe | st.fixed_dictionaries(
            {"carveoutIndex": st.integers(0, 255), "dynamicLimitMi": st.integers(1, 1048576)}
        ),
        "memoryStage": st.sampled_from([None, "uma", "ttm"]),
        "rebootCount": maybe | st.integers(0, 16),
        "stageBootId": boots,
    },
)
legacy_docs = st.fixed_dictionaries(
    {
        "completed": st.lists(st.text(HEX, min_size=32, max_size=32), max_size=5),
        "current": maybe | currents,
    }
)


@settings(max_examples=300, deadline=None)
@given(doc=legacy_docs)
def test_every_admitted_legacy_file_migrates_to_a_valid_state(doc: dict[str, Any]) -> None:
    from magicstick_host import schemas

    assert schemas.errors("legacy-state", doc) == []
    state = migrate_legacy_state(doc, wall=NOW, boottime=BOOTTIME)
    assert schemas.errors("state", state.to_json()) == []
    assert all(state.seen_request_id(r) for r in doc["completed"])
    op, cur = state.operation, doc["current"]
    if cur is None:
        assert op is None
        return
    assert op is not None and state.seen_uid(cur["operationUid"]) is not None
    if not op.terminal:  # only the phases the contract continues, each in its own boot
        assert (op.action, op.phase) in {
            ("reboot", "RebootScheduled"),
            ("poweroff", "PoweroffScheduled"),
            ("prepare-gpu", "RebootScheduled"),
            ("configure-gpu-memory", "RebootScheduled"),
            ("prepare-gpu", "Registering"),
            ("prepare-gpu", "Validating"),
        }
        assert op.phase_boot_id and op.phase_since_boottime <= BOOTTIME
    elif cur["phase"] not in TERMINAL_PHASES:
        assert op.phase == "Interrupted" and NOT_RESUMED in op.message
