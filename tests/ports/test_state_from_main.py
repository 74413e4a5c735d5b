"""state.json files written by the worker before typed operation data (main at d0366f1) still
load, with each operation's data as its record, and go on from where they were.

tests/fixtures/state-main/ holds one file per operation and phase that version saved (with and
without a step in progress, finished and interrupted, over an existing ModuleActivation), and
its migrations of every legacy fixture (the original worker's files, whose data has None for
what the original did not record). They were written by running that version's own harness
(World, through every crash point) against the test apiserver.
"""

from __future__ import annotations

import dataclasses
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from magicstick_host.domain.decisions import SetPhase, Situation
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.limits import DEFAULT_LIMITS
from magicstick_host.domain.operations.decide import decide
from magicstick_host.domain.operations.registry import data_type, kind_of
from magicstick_host.domain.records import camel
from magicstick_host.domain.state_codec import record_type
from magicstick_host.ports.state_store import FileStateStore

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "state-main"
FILES = sorted(FIXTURES.glob("*.json"))


def plant(directory: Path, doc: dict[str, Any]) -> FileStateStore:
    directory.mkdir(mode=0o700)
    path = directory / "state.json"
    path.write_text(json.dumps(doc))
    os.chmod(path, 0o600)
    return FileStateStore(directory)


def test_every_operation_and_its_phases_are_there() -> None:
    names = {f.stem for f in FILES}
    assert len(names) >= 50
    for action in ("reboot", "poweroff", "prepare-gpu", "configure-gpu-memory"):
        assert {n for n in names if n.startswith(f"{action}--")}, action
    assert sum(1 for n in names if "--open-" in n) >= 10  # steps in progress
    assert sum(1 for n in names if n.startswith("legacy--")) == 15


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_a_state_written_by_main_loads_as_typed_records(tmp_path: Path, path: Path) -> None:
    doc = json.loads(path.read_text())
    store = plant(tmp_path / "state", doc)
    state = store.load()
    assert state is not None
    op = state.operation
    if doc["operation"] is None:
        assert op is None
        return
    assert op is not None
    # a finished operation the original worker ran of an action it had no record for keeps
    # none (domain/state_codec.py record_type), even once this worker runs that action
    data = {k: v for k, v in doc["operation"]["data"].items() if k != "legacy"}
    expected = record_type(op.action, data, op.legacy, op.phase)
    assert isinstance(op.data, expected)
    assert expected is data_type(op.action) or "legacy" in doc["operation"]["data"]
    assert op.phase == doc["operation"]["phase"]
    if "legacy" in doc["operation"]["data"]:
        assert op.legacy is not None and op.legacy.to_json() == doc["operation"]["data"]["legacy"]
    # what the file held is what the state holds; a field the file predates has its default
    written = op.to_json()["data"]
    old = doc["operation"]["data"]
    assert {k: written[k] for k in old} == old
    defaults = {
        camel(f.name): f.default
        for f in dataclasses.fields(op.data)
        if f.default is not dataclasses.MISSING
    }
    assert {k: v for k, v in written.items() if k not in old} == {
        k: v for k, v in defaults.items() if k not in old
    }
    # and it saves and loads again unchanged
    store.save(state)
    assert FileStateStore(tmp_path / "state").load() == state


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_an_operation_written_by_main_goes_on_from_its_phase(tmp_path: Path, path: Path) -> None:
    state = plant(tmp_path / "state", json.loads(path.read_text())).load()
    op = state.operation if state is not None else None
    if op is None or op.terminal:
        return
    kind = kind_of(op.action)
    assert kind is not None
    assert isinstance(op.data, kind.data)
    now = Situation(
        ev=Evidence(boot_id=op.phase_boot_id or "b"),
        wall=datetime(2026, 5, 9, 7, 11, tzinfo=UTC),
        boottime=op.phase_since_boottime + 1,
        limits=DEFAULT_LIMITS,
    )
    decision = decide(kind, op, now)
    assert not (isinstance(decision, SetPhase) and "no decision" in decision.message), decision
