"""FileStateStore on a real temp directory: modes, refusals, atomic saves, corruption, journal."""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import stat
import types
import typing
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_type_hints

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magicstick_host import lite_dataclasses, schemas
from magicstick_host.domain.operations.configure_gpu_memory.data import MemoryData
from magicstick_host.domain.operations.prepare_gpu.data import PrepareData
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.records import NoData
from magicstick_host.domain.state import Block, Operation, ProcessedRequest, State, Step
from magicstick_host.domain.text import MAX_MESSAGE
from magicstick_host.errors import BadInputError, StateCorruptError, StateError, UnsafePathError
from magicstick_host.ports.clock import Instant
from magicstick_host.ports.state_store import TEMP_PREFIX, FileStateStore

NOBODY = 65534
NOW = datetime(2026, 5, 9, 7, 35, 12, tzinfo=UTC)


class FixedClock:
    def now(self) -> Instant:
        return Instant(wall=NOW, boottime=100.0)


class SimulatedCrash(BaseException):
    pass


def crash_at(point: str) -> Callable[[str], None]:
    def hook(at: str) -> None:
        if at == point:
            raise SimulatedCrash(at)

    return hook


def make_store(tmp_path: Path, **kw: Any) -> FileStateStore:
    return FileStateStore(tmp_path / "state", clock=FixedClock(), **kw)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def plant(store: FileStateStore, content: bytes) -> None:
    """Put raw bytes in state.json with the right mode, as a torn or broken write would."""
    store.prepare()
    store.state_path.write_bytes(content)
    os.chmod(store.state_path, 0o600)


def temp_files(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.startswith(TEMP_PREFIX)]


def a_state(phase: str = "Accepted") -> State:
    op = Operation(
        request_uid="0b7e6c1e-9a0d-4b8e-8f5e-2f6f1a2b3c4d",
        request_id="a" * 32,
        action="prepare-gpu",
        namespace="ai-system",
        name="prepare-1",
        request_digest="b" * 64,
        plan_id="",
        accepted_boot_id="boot-1",
        accepted_at="2026-05-09T07:00:00Z",
        phase=Phase(phase),
        message="accepted",
        updated_at="2026-05-09T07:00:00Z",
        phase_boot_id="boot-1",
        phase_since_boottime=12.5,
        steps=(Step("schedule-shutdown", {"delay": 1}, "boot-1", "2026-05-09T07:00:01Z", 13.0),),
        data=PrepareData(
            packages={"linux-generic": "7.0.0-10.10"},
            target_kernel="7.0.0-10-generic",
            reboot_required=True,
            gpu_profile="strix-halo",
            profile_id="strix-halo-ubuntu-26.04",
            profile_version="1",
            os_version_id="26.04",
            experiment=False,
            engine_validation_available=True,
            module_identity=None,
            install_done=False,
        ),
    )
    return State(operation=op, processed=(ProcessedRequest("u0", "c" * 32, "Succeeded"),))


# ---- directory and file safety ---------------------------------------------------------------


def test_prepare_creates_directory_0700_with_parents(tmp_path: Path) -> None:
    store = FileStateStore(tmp_path / "var" / "lib" / "state")
    store.prepare()
    store.prepare()  # idempotent
    assert mode(store.directory) == 0o700
    assert store.load() is None


def test_prepare_refuses_symlinked_directory(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "state").symlink_to(real)
    with pytest.raises(UnsafePathError, match="symlink"):
        make_store(tmp_path).prepare()


@pytest.mark.parametrize("loose", [0o750, 0o705, 0o777, 0o701])
def test_prepare_refuses_group_or_other_access(tmp_path: Path, loose: int) -> None:
    (tmp_path / "state").mkdir()
    os.chmod(tmp_path / "state", loose)
    with pytest.raises(UnsafePathError, match=f"mode {loose:04o} is too open"):
        make_store(tmp_path).prepare()


def test_prepare_refuses_foreign_owner(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.prepare()
    with pytest.raises(UnsafePathError, match="owned by uid"):
        make_store(tmp_path, owner_uid=os.geteuid() + 4242).prepare()
    if os.geteuid() == 0:
        os.chown(store.directory, NOBODY, NOBODY)
        with pytest.raises(UnsafePathError, match=f"owned by uid {NOBODY}"):
            store.prepare()


def test_prepare_refuses_a_file_in_place_of_the_directory(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("")
    with pytest.raises(UnsafePathError, match="not a directory"):
        make_store(tmp_path).prepare()


def test_state_symlink_refused_and_left_alone(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.save(a_state())
    store.state_path.rename(store.directory / "elsewhere.json")
    store.state_path.symlink_to(store.directory / "elsewhere.json")
    with pytest.raises(UnsafePathError, match="symlink"):
        store.load()
    assert store.state_path.is_symlink()
    assert not list(store.directory.glob("state.json.corrupt-*"))


@pytest.mark.parametrize("loose", [0o644, 0o640, 0o604, 0o700])
def test_loose_state_file_refused(tmp_path: Path, loose: int) -> None:
    store = make_store(tmp_path)
    store.save(a_state())
    os.chmod(store.state_path, loose)
    with pytest.raises(UnsafePathError, match="too open"):
        store.load()


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_foreign_owned_state_file_refused(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.save(a_state())
    os.chown(store.state_path, NOBODY, NOBODY)
    with pytest.raises(UnsafePathError, match=f"owned by uid {NOBODY}"):
        store.load()


def test_fifo_in_place_of_state_refused_without_hanging(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.prepare()
    os.mkfifo(store.state_path, 0o600)
    with pytest.raises(UnsafePathError, match="not a regular file"):
        store.load()


# ---- save and load ---------------------------------------------------------------------------


def test_save_load_round_trip_and_modes(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    assert store.load() is None
    store.save(a_state())
    assert store.load() == a_state()
    assert mode(store.state_path) == 0o600
    assert temp_files(store.directory) == []
    store.save(a_state("Preparing"))
    loaded = store.load()
    assert loaded is not None and loaded.operation is not None
    assert loaded.operation.phase == "Preparing"


def test_save_refuses_schema_invalid_state(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.save(a_state())
    before = store.state_path.read_bytes()
    bad = State(block=Block("no-such-code", "m", "t"))
    with pytest.raises(ValueError, match="invalid state"):
        store.save(bad)
    assert store.state_path.read_bytes() == before
    assert temp_files(store.directory) == []


def test_crash_before_replace_keeps_old_state(tmp_path: Path) -> None:
    make_store(tmp_path).save(a_state())
    store = make_store(tmp_path, fault=crash_at("before-replace"))
    with pytest.raises(SimulatedCrash):
        store.save(a_state("Applying"))
    assert store.load() == a_state()
    assert temp_files(store.directory) == []


def test_crash_after_replace_has_new_state(tmp_path: Path) -> None:
    make_store(tmp_path).save(a_state())
    store = make_store(tmp_path, fault=crash_at("after-replace"))
    with pytest.raises(SimulatedCrash):
        store.save(a_state("Applying"))
    assert make_store(tmp_path).load() == a_state("Applying")


def _save_then_die(directory: Path) -> None:
    def power_loss(point: str) -> None:
        if point == "before-replace":
            os._exit(0)  # no cleanup runs, as in a real power loss

    FileStateStore(directory, clock=FixedClock(), fault=power_loss).save(a_state("Applying"))


def test_process_death_before_replace_leaves_old_state_and_temp_is_swept(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.save(a_state())
    child = multiprocessing.get_context("fork").Process(
        target=_save_then_die, args=(store.directory,)
    )
    child.start()
    child.join(30)
    assert child.exitcode == 0
    assert len(temp_files(store.directory)) == 1  # the torn write is left behind ...
    assert store.load() == a_state()  # ... the old state is intact ...
    assert temp_files(store.directory) == []  # ... and load sweeps the leftover


# ---- corruption ------------------------------------------------------------------------------


def _assert_blocked_after_corruption(store: FileStateStore, original: bytes) -> Path:
    archives = sorted(store.directory.glob("state.json.corrupt-*"))
    assert len(archives) == 1
    archive = archives[0]
    assert archive.name == "state.json.corrupt-20260509T073512Z"
    assert archive.read_bytes() == original
    state = store.load()  # the Block state loads without raising again
    assert state is not None and state.block is not None
    assert state.block.code == "state-corrupt"
    assert state.block.archived == str(archive)
    assert state.block.since == "2026-05-09T07:35:12Z"
    assert state.operation is None
    assert mode(store.state_path) == 0o600
    journal = store.read_journal()
    assert journal[-1]["event"] == "state-corrupt"
    assert journal[-1]["archived"] == str(archive)
    return archive


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"{not json",
        b'{"schemaVersion": 1, "operation": null, "proc',  # a torn write
        b"\xff\xfe garbage",
        b'{"schemaVersion": NaN}',
    ],
    ids=["empty", "syntax", "truncated", "not-utf8", "nan"],
)
def test_unparseable_state_is_moved_aside_and_blocks(tmp_path: Path, content: bytes) -> None:
    store = make_store(tmp_path)
    plant(store, content)
    with pytest.raises(StateCorruptError) as raised:
        store.load()
    archive = _assert_blocked_after_corruption(store, content)
    message = str(raised.value)
    assert "\n" not in message
    assert str(archive) in message


def test_an_over_long_block_message_of_an_earlier_version_blocks_again_clipped(
    tmp_path: Path,
) -> None:
    """Issue #24 N6: the previous version wrote a block message as long as its path; the
    schema bounds it now, so that file is archived as corrupt and the new block fits."""
    store = make_store(tmp_path)
    long_path = "/" + "d" * 2500
    content = json.dumps({
        "schemaVersion": 1, "operation": None, "processed": [],
        "block": {"code": "state-corrupt", "message": f"archived to {long_path}",
                  "since": "2026-05-09T07:00:00Z", "archived": long_path},
    }).encode()
    plant(store, content)
    with pytest.raises(StateCorruptError):
        store.load()
    _assert_blocked_after_corruption(store, content)
    state = store.load()
    assert state is not None and state.block is not None
    assert len(state.block.message) <= MAX_MESSAGE and "corrupt" in state.block.message


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(schemaVersion=2),
        lambda d: d["operation"].update(requestId="not-hex"),
        lambda d: d["operation"].update(phase="Dancing"),
        lambda d: d.pop("processed"),
        lambda d: d.update(extra=True),
    ],
    ids=["version", "request-id", "phase", "missing", "extra"],
)
def test_schema_invalid_state_is_moved_aside_and_blocks(
    tmp_path: Path, mutate: Callable[[dict[str, Any]], None]
) -> None:
    store = make_store(tmp_path)
    doc = a_state().to_json()
    mutate(doc)
    content = json.dumps(doc).encode()
    plant(store, content)
    with pytest.raises(StateCorruptError, match="schema"):
        store.load()
    _assert_blocked_after_corruption(store, content)


def test_second_corruption_in_same_second_gets_its_own_archive(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    for content in (b"one", b"two"):
        plant(store, content)
        with pytest.raises(StateCorruptError):
            store.load()
    base = store.directory / "state.json.corrupt-20260509T073512Z"
    first, second = base, base.with_name(base.name + ".1")
    assert (first.read_bytes(), second.read_bytes()) == (b"one", b"two")


def test_crash_while_archiving_never_leaves_state_absent(tmp_path: Path) -> None:
    store = make_store(tmp_path, fault=crash_at("after-archive"))
    plant(store, b"garbage")
    with pytest.raises(SimulatedCrash):
        store.load()
    assert store.state_path.read_bytes() == b"garbage"  # still there: not "no state"
    with pytest.raises(StateCorruptError):
        make_store(tmp_path).load()
    state = make_store(tmp_path).load()
    assert state is not None and state.block is not None


# ---- journal and logs ------------------------------------------------------------------------


def test_journal_appends_compact_lines_0600(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    assert store.read_journal() == []
    entries = [
        {"time": "t1", "bootId": "b", "phase": "Accepted", "evidence": "d" * 64},
        {"time": "t2", "bootId": "b", "phase": "Preparing", "note": "two\nlines"},
    ]
    for entry in entries:
        store.append_journal(entry)
    assert store.read_journal() == entries
    assert mode(store.journal_path) == 0o600
    assert len(store.journal_path.read_bytes().splitlines()) == 2


def test_journal_tolerates_torn_last_line_and_keeps_appending(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.append_journal({"n": 1})
    with open(store.journal_path, "ab") as f:
        f.write(b'{"n": 2, "pha')  # power loss mid-write
    assert store.read_journal() == [{"n": 1}]
    store.append_journal({"n": 3})
    assert store.read_journal() == [{"n": 1}, {"n": 3}]
    with open(store.journal_path, "ab") as f:
        f.write(b"\0\0\0\0")  # a tail of zeros after a power loss
    assert store.read_journal() == [{"n": 1}, {"n": 3}]


def test_journal_symlink_refused(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.prepare()
    target = tmp_path / "target"
    target.write_text("")
    store.journal_path.symlink_to(target)
    with pytest.raises(UnsafePathError, match="symlink"):
        store.append_journal({"n": 1})
    with pytest.raises(UnsafePathError, match="symlink"):
        store.read_journal()
    assert target.read_text() == ""


def test_op_log_path_and_file_modes(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    uid = "0b7e6c1e-9a0d-4b8e-8f5e-2f6f1a2b3c4d"
    path = store.op_log_path(uid)
    assert path == store.directory / "logs" / f"{uid}.log"
    assert mode(path.parent) == 0o700
    with store.open_op_log(uid) as log:
        log.write(b"PLAY [all]\n")
    with store.open_op_log(uid) as log:
        log.write(b"PLAY RECAP\n")
    assert path.read_bytes() == b"PLAY [all]\nPLAY RECAP\n"
    assert mode(path) == 0o600


@pytest.mark.parametrize("bad", ["", "../x", "a/b", ".hidden", "x\0y", "a" * 300])
def test_op_log_path_refuses_unsafe_uid(tmp_path: Path, bad: str) -> None:
    with pytest.raises(BadInputError):
        make_store(tmp_path).op_log_path(bad)


def test_op_log_dir_symlink_refused(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.prepare()
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (store.directory / "logs").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafePathError, match="symlink"):
        store.op_log_path("abc")


# ---- property: State -> save -> load is the identity -----------------------------------------

_OPERATION = schemas._document("state")["$defs"]["operation"]["properties"]
PHASES = list(_OPERATION["phase"]["enum"])
HEX = "0123456789abcdef"
texts = st.text(max_size=12)
finite = st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | finite | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
steps = st.builds(
    Step,
    name=st.text(min_size=1, max_size=12),
    inputs=st.dictionaries(texts, json_values, max_size=3),
    boot_id=texts,
    started_at=texts,
    started_boottime=finite,
    outcome=st.sampled_from([None, "done", "failed", "classified-done", "unknown"]),
    finished_at=st.none() | texts,
    detail=texts,
)


def records(cls: type) -> st.SearchStrategy[Any]:
    """Instances of a record class, every field drawn from its type as the worker reads it
    (typing.get_type_hints, as domain/records.py reads them)."""
    return st.builds(cls, **{name: _of_type(hint) for name, hint in get_type_hints(cls).items()})


def _of_type(hint: Any) -> st.SearchStrategy[Any]:
    if isinstance(hint, type) and lite_dataclasses.is_dataclass(hint):
        return records(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(_of_type(arg) for arg in args))
    if origin is list:
        return st.lists(_of_type(args[0]), max_size=3)
    if origin is dict:
        return st.dictionaries(_of_type(args[0]), _of_type(args[1]), max_size=3)
    return st.from_type(hint)


# each action with a record of its own type; an action this worker does not run has none
action_and_data = st.one_of(
    st.tuples(st.sampled_from(["reboot", "poweroff"]) | texts, st.just(NoData())),
    st.tuples(st.just("prepare-gpu"), records(PrepareData)),
    st.tuples(st.just("configure-gpu-memory"), records(MemoryData)),
).filter(lambda pair: pair[0] not in ("prepare-gpu", "configure-gpu-memory")
         or not isinstance(pair[1], NoData))
operations = st.builds(
    lambda pair, **fields: Operation(action=pair[0], data=pair[1], **fields),
    action_and_data,
    request_uid=st.text(min_size=1, max_size=12),
    request_id=st.text(HEX, min_size=32, max_size=32),
    namespace=texts,
    name=texts,
    request_digest=st.text(HEX, min_size=64, max_size=64),
    plan_id=texts,
    accepted_boot_id=texts,
    accepted_at=texts,
    phase=st.sampled_from(PHASES).map(Phase),
    message=st.text(max_size=64),
    updated_at=texts,
    phase_boot_id=texts,
    phase_since_boottime=finite,
    reboots_used=st.integers(0, 10),
    reboot_budget=st.integers(0, 10),
    steps=st.lists(steps, max_size=3).map(tuple),
    outcome=st.sampled_from(["", "uncertain"]),
)
states = st.builds(
    State,
    operation=st.none() | operations,
    processed=st.lists(
        st.builds(ProcessedRequest, st.text(min_size=1, max_size=8), texts, texts), max_size=3
    ).map(tuple),
    block=st.none()
    | st.builds(
        Block, st.sampled_from(["execution-state-removed", "state-corrupt"]), texts, texts, texts
    ),
    last_report_digest=texts,
    last_report_at=texts,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(state=states)
def test_save_load_round_trip_property(tmp_path: Path, state: State) -> None:
    store = make_store(tmp_path)
    store.save(state)
    assert store.load() == state


# ---- hostile state files: corrupt, never a crash --------------------------------------------


def _nested(depth: int) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for _ in range(depth):
        doc = {"x": doc}
    return doc


@pytest.mark.parametrize(
    "content",
    [
        b"[" * 200_000,  # json raises RecursionError, not ValueError
        b'{"schemaVersion": 1, "operation": ' + b'{"a":' * 100_000,
        json.dumps({**a_state().to_json(), "lastReportDigest": "x"})
        .replace('"targetKernel": "7.0.0-10-generic"', f'"deep": {json.dumps(_nested(200))}')
        .encode(),
    ],
    ids=["arrays", "objects", "deep-but-parseable"],
)
def test_deep_nesting_is_corrupt_state_not_a_crash(tmp_path: Path, content: bytes) -> None:
    store = make_store(tmp_path)
    plant(store, content)
    with pytest.raises(StateCorruptError, match="nested deeper than 64 levels"):
        store.load()
    _assert_blocked_after_corruption(store, content)


@pytest.mark.parametrize("content", [b"[]", b"5", b'"state"', b"null", b"true", b"[{}]"])
def test_a_document_that_is_not_an_object_is_corrupt_state(tmp_path: Path,
                                                            content: bytes) -> None:
    store = make_store(tmp_path)
    plant(store, content)
    with pytest.raises(StateCorruptError, match="not a JSON object"):
        store.load()
    _assert_blocked_after_corruption(store, content)


@pytest.mark.parametrize(
    "content",
    [
        b'{"schemaVersion": 1, "operation": null, "processed": [], "block": null, "block": '
        b'{"code": "state-corrupt", "message": "m", "since": "t"}}',
        json.dumps(a_state().to_json()).replace('"phase": "Accepted"', '"phase": "Accepted", '
                                                '"phase": "Succeeded"').encode(),
    ],
    ids=["top-level", "operation"],
)
def test_duplicate_keys_are_corrupt_state(tmp_path: Path, content: bytes) -> None:
    store = make_store(tmp_path)
    plant(store, content)
    with pytest.raises(StateCorruptError, match="duplicate key"):
        store.load()
    _assert_blocked_after_corruption(store, content)


def test_peek_never_blocks_on_a_fifo_and_never_raises(tmp_path: Path) -> None:
    import threading

    store = make_store(tmp_path)
    store.prepare()
    os.mkfifo(store.state_path, 0o600)
    os.mkfifo(store.journal_path, 0o600)
    results: list[Any] = []
    reader = threading.Thread(
        target=lambda: results.extend([store.peek_state(), store.peek_journal()]), daemon=True
    )
    reader.start()
    reader.join(20)
    assert not reader.is_alive(), "reading a FIFO blocked"
    (state, error, legacy), (entries, journal_error, skipped) = results
    assert state is None and "not a regular file" in error and legacy is False
    assert entries == [] and "not a regular file" in journal_error and skipped == 0


# ---- the journal: every committed transition, exactly once, in order ------------------------


def entry(n: int) -> dict[str, Any]:
    return {"at": f"2026-05-09T07:35:{n:02d}Z", "event": f"e{n}", "requestId": "a" * 32}


def test_commit_numbers_entries_and_records_the_newest_in_the_state(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    for n in (1, 2, 3):
        committed = store.commit(a_state(), entry(n))
        assert committed.last_journal == {**entry(n), "seq": n}
    assert [e["seq"] for e in store.read_journal()] == [1, 2, 3]
    loaded = make_store(tmp_path).load()
    assert loaded is not None and loaded.last_journal == {**entry(3), "seq": 3}
    # a plain save (a status write) keeps the newest entry with the state
    store.save(a_state("Preparing"))
    again = make_store(tmp_path).load()
    assert again is not None and again.last_journal == {**entry(3), "seq": 3}


def test_a_kill_between_the_state_replace_and_the_append_is_repaired_on_load(
    tmp_path: Path,
) -> None:
    make_store(tmp_path).commit(a_state(), entry(1))
    dying = make_store(tmp_path, fault=crash_at("before-journal-append"))
    with pytest.raises(SimulatedCrash):
        dying.commit(a_state("Preparing"), entry(2))
    store = make_store(tmp_path)
    assert [e["seq"] for e in store.read_journal()] == [1]  # the transition happened ...
    state = store.load()
    assert state is not None and state.operation is not None
    assert state.operation.phase == "Preparing"
    assert store.read_journal() == [{**entry(1), "seq": 1}, {**entry(2), "seq": 2}]  # ... once
    make_store(tmp_path).load()
    assert len(store.read_journal()) == 2  # a repaired entry is never appended twice
    store.commit(a_state("Verifying"), entry(3))
    assert [e["seq"] for e in store.read_journal()] == [1, 2, 3]


def test_a_failed_append_is_a_state_error_and_the_next_load_appends_it(tmp_path: Path) -> None:
    def full_disk(point: str) -> None:
        if point == "before-journal-append":
            raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(StateError, match=r"appending entry 1 failed .*appended by the next tick"):
        make_store(tmp_path, fault=full_disk).commit(a_state(), entry(1))
    store = make_store(tmp_path)
    assert store.read_journal() == []
    assert store.load() is not None
    assert store.read_journal() == [{**entry(1), "seq": 1}]


def test_seq_continues_after_the_journal_is_replaced(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.commit(a_state(), entry(1))
    store.commit(a_state(), entry(2))
    store.journal_path.rename(store.directory / "journal.jsonl.old")
    fresh = make_store(tmp_path)
    fresh.load()  # the new journal starts with the newest committed entry ...
    assert fresh.read_journal() == [{**entry(2), "seq": 2}]
    fresh.commit(a_state(), entry(3))  # ... and numbering goes on
    assert [e["seq"] for e in fresh.read_journal()] == [2, 3]


def test_a_corrupt_state_entry_follows_the_journal_numbering(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.commit(a_state(), entry(1))
    plant(store, b"{torn")
    with pytest.raises(StateCorruptError):
        make_store(tmp_path).load()
    events = [(e["seq"], e["event"]) for e in store.read_journal()]
    assert events == [(1, "e1"), (2, "state-corrupt")]


def test_the_journal_tail_is_found_behind_a_long_last_line(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.commit(a_state(), {**entry(1), "message": "m" * 600_000})
    assert make_store(tmp_path).journal.last_seq() == 1


def set_immutable(path: Path, on: bool) -> None:
    import fcntl
    import struct

    fs_ioc_getflags, fs_ioc_setflags, immutable = 0x80086601, 0x40086602, 0x10
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        flags = struct.unpack("l", fcntl.ioctl(fd, fs_ioc_getflags, struct.pack("l", 0)))[0]
        flags = flags | immutable if on else flags & ~immutable
        fcntl.ioctl(fd, fs_ioc_setflags, struct.pack("l", flags))
    finally:
        os.close(fd)


def make_unwritable(path: Path) -> Callable[[], None]:
    """Immutable as root (chattr +i); read-only mode otherwise. Returns the undo."""
    if os.geteuid() == 0:
        set_immutable(path, True)
        return lambda: set_immutable(path, False)
    os.chmod(path, 0o400)
    return lambda: os.chmod(path, 0o600)


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda p: p.mkdir(mode=0o700), UnsafePathError, "is not a regular file"),
        (lambda p: p.symlink_to(p.parent / "elsewhere"), UnsafePathError, "is a symlink"),
        (lambda p: os.mkfifo(p, 0o600), UnsafePathError, "is not a regular file"),
        (lambda p: (p.write_text(""), p.chmod(0o644)), UnsafePathError, "too open"),
        (lambda p: (p.write_text(""), p.chmod(0o600), make_unwritable(p)), StateError,
         "cannot be written"),
    ],
    ids=["directory", "symlink", "fifo", "loose", "unwritable"],
)
def test_an_unusable_journal_blocks_the_load_before_any_transition(
    tmp_path: Path, make: Callable[[Path], Any], error: type[Exception], match: str
) -> None:
    store = make_store(tmp_path)
    store.save(a_state())
    before = store.state_path.read_bytes()
    make(store.journal_path)
    try:
        with pytest.raises(error, match=match):
            make_store(tmp_path).load()
        assert store.state_path.read_bytes() == before  # nothing was touched
    finally:
        journal = store.journal_path
        if os.geteuid() == 0 and journal.is_file() and not journal.is_symlink():
            set_immutable(journal, False)


def test_an_unwritable_state_file_blocks_the_load(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.save(a_state())
    undo = make_unwritable(store.state_path)
    try:
        with pytest.raises(StateError, match=r"state\.json: cannot be written"):
            make_store(tmp_path).load()
    finally:
        undo()
    assert make_store(tmp_path).load() == a_state()


# ---- the original worker's state file ---------------------------------------------------------


def test_a_legacy_state_is_migrated_once_and_kept_beside(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    legacy = {"completed": ["c" * 32], "current": None}
    plant(store, json.dumps(legacy).encode())
    state = store.load()
    assert state is not None and state.seen_request_id("c" * 32)
    assert json.loads(store.state_path.read_text())["schemaVersion"] == 1
    (kept,) = store.directory.glob("state.json.legacy-*")
    assert json.loads(kept.read_text()) == legacy
    assert [e["event"] for e in store.read_journal()] == ["migrated-from-legacy"]


def test_a_crash_while_migrating_migrates_again_and_loses_nothing(tmp_path: Path) -> None:
    store = make_store(tmp_path, fault=crash_at("before-replace"))
    plant(store, json.dumps({"completed": ["c" * 32], "current": None}).encode())
    with pytest.raises(SimulatedCrash):
        store.load()
    assert "schemaVersion" not in json.loads(store.state_path.read_text())  # still the original
    state = make_store(tmp_path).load()
    assert state is not None and state.seen_request_id("c" * 32)
    assert [e["event"] for e in store.read_journal()] == ["migrated-from-legacy"]


# ---- recover's quarantine: what no load can use is moved aside ------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda p: p.symlink_to(p.parent / "elsewhere.json"),
        lambda p: os.mkfifo(p, 0o600),
        lambda p: p.mkdir(mode=0o700),
    ],
    ids=["symlink", "fifo", "directory"],
)
def test_quarantine_moves_an_unusable_state_file_aside_and_blocks(
    tmp_path: Path, make: Callable[[Path], Any]
) -> None:
    store = make_store(tmp_path)
    store.prepare()
    make(store.state_path)
    moved = store.quarantine()
    assert len(moved) == 1 and "state.json.unsafe-20260509T073512Z" in moved[0]
    assert os.path.lexists(store.directory / "state.json.unsafe-20260509T073512Z")
    state = make_store(tmp_path).load()
    assert state is not None and state.block is not None and state.block.code == "state-corrupt"
    assert "moved aside" in state.block.message
    assert store.read_journal()[-1]["event"] == "state-quarantined"


def test_quarantine_moves_an_unusable_journal_aside_and_numbering_goes_on(
    tmp_path: Path,
) -> None:
    store = make_store(tmp_path)
    store.commit(a_state(), entry(1))
    store.journal_path.rename(store.directory / "j.old")
    store.journal_path.mkdir(mode=0o700)
    moved = make_store(tmp_path).quarantine()
    assert len(moved) == 1 and "journal.jsonl.unsafe-" in moved[0]
    fresh = make_store(tmp_path)
    assert fresh.load() == replace(a_state(), last_journal={**entry(1), "seq": 1})
    assert fresh.read_journal() == [{**entry(1), "seq": 1}]


def test_quarantine_leaves_what_chmod_or_chown_fixes(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.save(a_state())
    os.chmod(store.state_path, 0o644)
    assert store.quarantine() == []
    assert store.state_path.is_file()


# ---- property: the strict reader fails only with a reason, and agrees with json otherwise ---


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=64) | json_values.map(lambda v: json.dumps(v).encode()))
def test_strict_json_reads_plain_json_and_refuses_the_rest_with_a_reason(raw: bytes) -> None:
    from magicstick_host.domain.strict_json import loads_strict

    try:
        expected = json.loads(raw)
    except ValueError:
        expected = ValueError
    try:
        got = loads_strict(raw)
    except ValueError as exc:
        assert str(exc)
        return
    assert expected is not ValueError and got == expected
