"""The soak's hostile helpers (tests/soak/hostile.py) do what the invariants rely on: the scan
finds a process carrying a host's tool marker (and only that host's), the huge answer is
streamed, and each planted memo is where the tick will look, pointing at the decoy."""

from __future__ import annotations

import os
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from magicstick_host.sim.faults import HOSTILE_TOOL_ENV
from tests.soak.hostile import (
    HUGE_BYTES,
    MEMO,
    MEMO_KINDS,
    NOBODY,
    hostile_answer,
    kill_marked,
    leftovers,
    marked_processes,
    pid_of,
    plant_memo,
    unplant,
)

pytestmark = [pytest.mark.real_commands]


def test_the_scan_finds_a_marked_process_and_its_child_and_kill_ends_them(tmp_path: Path) -> None:
    marker = str(tmp_path / "host")
    other = marker + "-2"  # another host's marker, a prefix of which this one is not
    proc = subprocess.Popen(["/bin/sh", "-c", "sleep 60 & exec sleep 60"],
                            env={**os.environ, HOSTILE_TOOL_ENV: marker},
                            start_new_session=True)
    try:
        # until both are `sleep 60`: a scan while either is still exec'ing does not see it
        # (marked_processes), so two found by the shells they were could be one a moment later
        assert argvs(scan_until(marker, lambda found: argvs(found) == ["sleep 60"] * 2)) \
            == ["sleep 60", "sleep 60"]
        assert marked_processes(other) == []
        assert kill_marked(marker) == 2
        proc.wait(5)
        assert leftovers(marker, grace_s=2.0) == []
    finally:
        kill_marked(marker)


def scan_until(marker: str, done: Callable[[list[str]], bool], within_s: float = 5) -> list[str]:
    """marked_processes(marker) once `done` holds for it, or as it is after `within_s`."""
    deadline = time.monotonic() + within_s
    while not done(found := marked_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def argvs(found: list[str]) -> list[str]:
    """The argv of each process marked_processes found ('pid argv'), sorted."""
    return sorted(line.split(" ", 1)[1].strip() for line in found)


def test_kill_marked_scans_again_for_a_process_the_first_scan_missed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = str(tmp_path / "host")
    env = {**os.environ, HOSTILE_TOOL_ENV: marker}
    procs = [subprocess.Popen(["sleep", "60"], env=env, start_new_session=True)
             for _ in range(2)]
    try:
        assert len(scan_until(marker, lambda found: len(found) == 2)) == 2
        real, scans = marked_processes, []

        def first_misses_one(wanted: str) -> list[str]:  # as if it were exec'ing then
            scans.append(wanted)
            found = real(wanted)
            return [x for x in found if pid_of(x) != procs[1].pid] if len(scans) == 1 else found

        monkeypatch.setattr("tests.soak.hostile.marked_processes", first_misses_one)
        assert kill_marked(marker) == 2
        assert [proc.wait(5) for proc in procs] == [-9, -9]
    finally:
        monkeypatch.undo()
        kill_marked(marker)


def test_the_huge_answer_is_streamed_in_pieces_of_at_most_a_mib() -> None:
    sizes = [len(piece) for piece in hostile_answer("huge-33mib", None)]
    assert max(sizes) <= 2**20
    assert sum(sizes[1:]) == HUGE_BYTES


@pytest.mark.skipif(os.geteuid() != 0, reason="a memo of nobody's needs chown")
@pytest.mark.parametrize("kind", MEMO_KINDS)
def test_a_planted_memo_points_at_the_decoy_where_the_tick_looks(kind: str,
                                                                 tmp_path: Path) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    own = runtime / MEMO
    own.write_text('{"output": "server: https://127.0.0.1:1111"}')
    own.chmod(0o600)
    (runtime / "profiles.json").write_text("{}")
    planted = plant_memo(kind, runtime, tmp_path / "scratch", "https://127.0.0.1:1111", 2222)
    assert planted is not None
    memo = planted.runtime / MEMO
    assert b"https://127.0.0.1:2222" in memo.read_bytes()
    info = memo.stat()
    if kind == "memo-foreign":
        assert info.st_uid == NOBODY and stat.S_IMODE(info.st_mode) == 0o666
    if kind == "memo-dir-symlink":
        assert planted.runtime.is_symlink()
        assert stat.S_IMODE(planted.runtime.resolve().stat().st_mode) == 0o777
        assert (planted.runtime / "profiles.json").exists()
    assert unplant(planted)
    assert not (tmp_path / "scratch").exists()
    assert kind == "memo-dir-symlink" or not own.exists()


def test_no_memo_of_the_worker_yet_plants_nothing(tmp_path: Path) -> None:
    assert plant_memo("memo-edited", tmp_path, tmp_path / "s", "https://127.0.0.1:1", 2) is None
