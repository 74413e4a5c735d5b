"""FileStateStore on a real temp directory: modes, refusals, atomic saves, corruption, journal."""

from __future__ import annotations

import json
import multiprocessing
import os
import stat
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magicstick_host import schemas
from magicstick_host.domain.state import Block, Operation, ProcessedRequest, State, Step
from magicstick_host.errors import BadInputError, StateCorruptError, UnsafePathError
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
        action="reboot",
        namespace="ai-system",
        name="reboot-1",
        request_digest="b" * 64,
        plan_id="",
        accepted_boot_id="boot-1",
        accepted_at="2026-05-09T07:00:00Z",
        phase=phase,
        message="accepted",
        updated_at="2026-05-09T07:00:00Z",
        phase_boot_id="boot-1",
        phase_since_boottime=12.5,
        steps=(Step("schedule-shutdown", {"delay": 1}, "boot-1", "2026-05-09T07:00:01Z", 13.0),),
        data={"targetKernel": "7.0.0-10-generic"},
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
operations = st.builds(
    Operation,
    request_uid=st.text(min_size=1, max_size=12),
    request_id=st.text(HEX, min_size=32, max_size=32),
    action=texts,
    namespace=texts,
    name=texts,
    request_digest=st.text(HEX, min_size=64, max_size=64),
    plan_id=texts,
    accepted_boot_id=texts,
    accepted_at=texts,
    phase=st.sampled_from(PHASES),
    message=st.text(max_size=64),
    updated_at=texts,
    phase_boot_id=texts,
    phase_since_boottime=finite,
    reboots_used=st.integers(0, 10),
    reboot_budget=st.integers(0, 10),
    steps=st.lists(steps, max_size=3).map(tuple),
    data=st.dictionaries(texts, json_values, max_size=3),
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
