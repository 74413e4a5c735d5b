"""The journal never misses a transition, and `history` reads it back for people.

A kill or a failed append between the state replace and the journal append used to lose the
transition; now the state carries its journal entry and the next load appends it. A journal
that cannot be written blocks the tick before any transition, visibly and recoverably.
"""

from __future__ import annotations

import errno
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magicstick_host import app_console, schemas
from magicstick_host.cli.main import main
from magicstick_host.domain.state import State
from magicstick_host.errors import StateError, UnsafePathError
from magicstick_host.ports.state_store import FileStateStore
from magicstick_host.sim.faults import SimulatedCrash
from magicstick_host.sim.writer import load_host
from magicstick_host.tick import run_tick
from magicstick_host.tick_result import TickResult
from tests.harness.world import World

READY = "strix-halo-ubuntu-26.04-ready"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def history(capsys: pytest.CaptureFixture[str], state_dir: Path) -> dict[str, Any]:
    done: list[dict[str, Any]] = []

    def read() -> None:
        code, out, err = cli(capsys, "history", "--json", "--state-dir", str(state_dir))
        assert code == 0, err
        done.append(json.loads(out))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(30)
    assert not reader.is_alive(), "history hung"
    doc = done[0]
    assert schemas.errors("history", doc) == []
    return doc


def tick_with(world: World, store: FileStateStore) -> TickResult | None:
    deps = world.deps()
    deps.store = store
    try:
        return run_tick(deps)
    except SimulatedCrash:
        return None  # the process was killed
    finally:
        world.clock.advance(15)


def drive(world: World, store: FileStateStore | None = None, max_ticks: int = 20) -> str:
    for _ in range(max_ticks):
        tick_with(world, store or FileStateStore(world.state_dir))
        store = None  # only the first tick uses the special store
        if load_host(world.root).shutdown is not None:
            world.boot()
        op = world.state().operation
        status = (world.hostop() or {}).get("status") or {}
        if op is not None and op.terminal and status.get("phase") == op.phase:
            return op.phase
    raise AssertionError("the operation did not end")


def assert_complete(world: World) -> list[dict[str, Any]]:
    """Every committed transition is in the journal once, in order, ending with the newest."""
    journal = world.journal()
    assert [e["seq"] for e in journal] == list(range(1, len(journal) + 1)), journal
    assert journal[-1] == world.state().last_journal
    return journal


class KilledBeforeAppend(FileStateStore):
    """The process dies at its n-th journal append, after the state was replaced."""

    def __init__(self, directory: Path, n: int) -> None:
        super().__init__(directory)
        self.n, self.seen = n, 0

    def append_journal(self, entry: dict[str, Any]) -> None:
        self.seen += 1
        if self.seen == self.n:
            raise SimulatedCrash("killed before the journal append")
        super().append_journal(entry)


@pytest.mark.apiserver
@pytest.mark.parametrize("n", [1, 2, 3])
def test_a_kill_between_state_and_journal_loses_no_transition(
    tmp_path: Path, kube: Any, n: int
) -> None:
    world = World(tmp_path, kube, READY)
    world.create_request("reboot")
    # accepted, intent, outcome: all in the first tick; the n-th append never happens
    tick_with(world, KilledBeforeAppend(world.state_dir, n))
    final = drive(world)
    events = [e["event"] for e in world.journal()]
    assert events.count("accepted") == 1 and events[0] == "accepted", events
    if n == 3:  # the shutdown was scheduled before the kill: its outcome is journaled too
        assert "outcome:schedule-shutdown" in events, events
    journal = assert_complete(world)
    assert journal[-1]["phase"] == final
    assert len(world.effects("shutdown")) <= 1


@pytest.mark.apiserver
def test_a_failed_append_stops_the_tick_and_the_next_tick_repairs_it(
    tmp_path: Path, kube: Any
) -> None:
    class FullDisk(FileStateStore):
        def append_journal(self, entry: dict[str, Any]) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

    world = World(tmp_path, kube, READY)
    world.create_request("reboot")
    deps = world.deps()
    deps.store = FullDisk(world.state_dir)
    with pytest.raises(StateError, match="appended by the next tick"):
        run_tick(deps)
    op = world.state().operation
    assert op is not None and op.phase == "Accepted"  # the transition is saved ...
    assert [e["event"] for e in world.journal()] == ["accepted"]  # ... and now journaled
    assert drive(world) == "Succeeded"
    assert_complete(world)


@pytest.mark.apiserver
def test_an_unusable_journal_blocks_before_any_transition_and_recover_clears_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, READY)
    FileStateStore(world.state_dir).prepare()
    (world.state_dir / "journal.jsonl").mkdir(mode=0o700)
    world.create_request("reboot")
    with pytest.raises(UnsafePathError, match=r"journal\.jsonl: is not a regular file"):
        run_tick(world.deps())
    assert not (world.state_dir / "state.json").exists()  # no transition without its journal
    assert (world.hostop() or {}).get("status") in (None, {})
    assert world.effects() == []
    code, out, _ = cli(
        capsys, "status", "--json", "--state-dir", str(world.state_dir), "--node-name", "n"
    )
    assert code == 0
    (condition,) = json.loads(out)["conditions"]
    assert condition["role"] == "journal" and "recover --confirm n" in condition["advice"]
    assert "journal.jsonl.unsafe-" in app_console.recover(str(world.state_dir), world.node_name)
    world.tick()
    assert world.phase() == "RebootScheduled"
    assert [e["event"] for e in world.journal()][:1] == ["accepted"]


@pytest.mark.apiserver
def test_history_lists_operations_with_transitions_boots_and_outcomes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, READY)
    first_boot = world.boot_id
    created = world.create_request("reboot")
    assert world.drive() == "Succeeded"
    kube.delete_hostoperation(world.request_name, created["metadata"]["uid"])
    rejected = world.create_request("poweroff", bootId="not-this-boot")
    world.tick()
    assert world.phase() == "Rejected"

    doc = history(capsys, world.state_dir)
    reboot, poweroff = doc["operations"]
    assert reboot["requestId"] == created["spec"]["requestId"]
    assert (reboot["action"], reboot["outcome"]) == ("reboot", "Succeeded")
    assert reboot["uncertain"] is False
    assert reboot["boots"] == [first_boot, world.boot_id]
    assert [t["event"] for t in reboot["transitions"]] == [
        "accepted",
        "intent:schedule-shutdown",
        "outcome:schedule-shutdown",
        "phase",
    ]
    assert [t["phase"] for t in reboot["transitions"]][-2:] == ["RebootScheduled", "Succeeded"]
    assert reboot["endedAt"] == reboot["transitions"][-1]["at"]
    # a rejection is its own entry, about the rejected request
    assert poweroff["requestUid"] == rejected["metadata"]["uid"]
    assert poweroff["requestId"] == rejected["spec"]["requestId"]
    assert poweroff["outcome"] == "Rejected"
    assert "different boot" in poweroff["transitions"][0]["message"]
    code, out, _ = cli(capsys, "history", "--state-dir", str(world.state_dir))
    assert code == 0
    assert f"reboot, request {created['spec']['requestId']}: Succeeded" in out
    assert "    " in out and "outcome:schedule-shutdown RebootScheduled" in out


def test_history_shows_a_committed_entry_that_is_not_in_the_journal_yet(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = FileStateStore(tmp_path / "state")
    entry = {"at": "2026-05-09T07:00:00Z", "event": "accepted", "requestId": "a" * 32,
             "requestUid": "u-1", "action": "reboot", "phase": "Accepted"}

    def die(point: str) -> None:
        if point == "before-journal-append":
            raise SimulatedCrash(point)

    with pytest.raises(SimulatedCrash):
        FileStateStore(store.directory, fault=die).commit(State(), entry)
    doc = history(capsys, store.directory)
    (op,) = doc["operations"]
    assert op["transitions"][0]["pending"] is True and op["outcome"] == "in progress"
    assert not store.journal_path.exists()  # history is read-only: nothing repaired here


def test_history_is_read_only_and_safe_on_hostile_journals(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    state_dir = tmp_path / "state"
    FileStateStore(state_dir).prepare()
    journal = state_dir / "journal.jsonl"
    good = {"seq": 1, "at": "2026-05-09T07:00:00Z", "event": "accepted", "requestUid": "u",
            "requestId": "a" * 32, "action": "reboot", "phase": "Accepted"}
    lines = [
        json.dumps(good).encode(),
        b"[" * 100_000,  # deep nesting
        b'{"seq": 2, "seq": 3, "at": "t", "event": "x"}',  # duplicate keys
        b"\xff\xfe not utf-8",
        b"42",
        b'{"seq": "x", "at": 1, "event": null, "operation": [1], "requestUid": {"a": 1}}',
        b'{"seq": 9, "at": "2026',  # torn
    ]
    journal.write_bytes(b"\n".join(lines))
    journal.chmod(0o600)
    before = {p.name: os.lstat(p).st_mtime_ns for p in state_dir.iterdir()}
    doc = history(capsys, state_dir)
    assert doc["skippedLines"] == 5 and doc["journalError"] == ""
    assert doc["operations"][0]["requestUid"] == "u"
    assert {p.name: os.lstat(p).st_mtime_ns for p in state_dir.iterdir()} == before

    journal.unlink()
    os.mkfifo(journal, 0o600)
    doc = history(capsys, state_dir)
    assert "not a regular file" in doc["journalError"] and doc["operations"] == []
    journal.unlink()
    journal.symlink_to("/etc/passwd")
    doc = history(capsys, state_dir)
    assert "symlink" in doc["journalError"] and doc["operations"] == []


def test_history_of_a_host_without_state_creates_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = history(capsys, tmp_path / "none")
    assert doc["operations"] == [] and doc["events"] == [] and doc["journalError"] == ""
    assert not (tmp_path / "none").exists()
    code, out, _ = cli(capsys, "history", "--state-dir", str(tmp_path / "none"))
    assert code == 0 and "No operations recorded." in out


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=3),
    max_leaves=6,
)
keys = st.sampled_from(
    ["seq", "at", "event", "requestUid", "requestId", "action", "phase", "message", "bootId",
     "outcome", "operation", "reason", "time", "node"]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=st.lists(st.dictionaries(keys, json_values, max_size=8), max_size=8),
       pending=st.none() | st.dictionaries(keys, json_values, max_size=8))
def test_build_history_takes_any_entries_and_always_matches_its_schema(
    entries: list[dict[str, Any]], pending: dict[str, Any] | None
) -> None:
    from datetime import UTC, datetime

    from magicstick_host.domain.history import build_history

    doc = build_history(
        entries, observed_at=datetime(2026, 5, 9, tzinfo=UTC), journal="j", pending=pending
    )
    assert schemas.errors("history", doc) == []
