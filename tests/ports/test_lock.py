"""MaintenanceLock on a real directory with real processes: pyfakefs cannot fake flock."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import stat
import threading
from multiprocessing.connection import Connection
from pathlib import Path

import pytest
from filelock import FileLock

from magicstick_host.errors import LockBusyError, UnsafePathError
from magicstick_host.ports.lock import MaintenanceLock

NOBODY = 65534


@pytest.fixture
def lock_path(tmp_path: Path) -> Path:
    directory = tmp_path / "state"
    directory.mkdir(mode=0o700)
    return directory / "maintenance.lock"


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_acquire_creates_0600_file_and_release_keeps_it(lock_path: Path) -> None:
    with MaintenanceLock(lock_path):
        assert mode(lock_path) == 0o600
    # flock(1) waiters must share the inode: the file is never unlinked
    assert lock_path.exists()
    with MaintenanceLock(lock_path):
        pass


def test_second_holder_in_same_process_is_busy(lock_path: Path) -> None:
    with MaintenanceLock(lock_path), pytest.raises(LockBusyError, match="held by another"):
        MaintenanceLock(lock_path).__enter__()


def test_busy_against_another_filelock_instance(lock_path: Path) -> None:
    with FileLock(str(lock_path)), pytest.raises(LockBusyError):
        MaintenanceLock(lock_path).__enter__()


def test_flock_compatible_with_host_convergence(lock_path: Path) -> None:
    """ansible-pull runs under flock(1): a plain flock on the same file must exclude us."""
    lock_path.touch(mode=0o600)
    fd = os.open(lock_path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(LockBusyError):
            MaintenanceLock(lock_path).__enter__()
        fcntl.flock(fd, fcntl.LOCK_UN)
        with MaintenanceLock(lock_path), pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def test_busy_from_another_thread(lock_path: Path) -> None:
    results: list[str] = []

    def contender() -> None:
        try:
            with MaintenanceLock(lock_path):
                results.append("acquired")
        except LockBusyError:
            results.append("busy")

    with MaintenanceLock(lock_path):
        thread = threading.Thread(target=contender)
        thread.start()
        thread.join(10)
    assert results == ["busy"]


def _hold(path: Path, conn: Connection) -> None:
    with MaintenanceLock(path):
        conn.send("held")
        conn.recv()  # until the parent says so


def _try(path: Path, conn: Connection) -> None:
    try:
        with MaintenanceLock(path):
            conn.send("acquired")
    except LockBusyError:
        conn.send("busy")


def test_contention_between_processes(lock_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    parent, child_end = ctx.Pipe()
    holder = ctx.Process(target=_hold, args=(lock_path, child_end))
    holder.start()
    try:
        assert parent.poll(30) and parent.recv() == "held"
        with pytest.raises(LockBusyError):
            MaintenanceLock(lock_path).__enter__()
        parent.send("release")
        holder.join(30)
        assert holder.exitcode == 0
        with MaintenanceLock(lock_path):
            # and now the other process is the one refused
            prober = ctx.Process(target=_try, args=(lock_path, child_end))
            prober.start()
            assert parent.poll(30) and parent.recv() == "busy"
            prober.join(30)
    finally:
        if holder.is_alive():
            holder.kill()


def test_lock_released_when_holder_dies(lock_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    parent, child_end = ctx.Pipe()
    holder = ctx.Process(target=_hold, args=(lock_path, child_end))
    holder.start()
    assert parent.poll(30) and parent.recv() == "held"
    holder.kill()
    holder.join(30)
    with MaintenanceLock(lock_path):
        pass


def test_released_when_body_raises(lock_path: Path) -> None:
    with pytest.raises(RuntimeError, match="boom"), MaintenanceLock(lock_path):
        raise RuntimeError("boom")
    with MaintenanceLock(lock_path):
        pass


def test_symlink_refused_and_target_untouched(lock_path: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    lock_path.symlink_to(target)
    with pytest.raises(UnsafePathError, match="symlink"), MaintenanceLock(lock_path):
        pass
    assert not target.exists()


def test_foreign_owner_refused(lock_path: Path) -> None:
    lock_path.touch(mode=0o600)
    with (
        pytest.raises(UnsafePathError, match="owned by uid"),
        MaintenanceLock(lock_path, owner_uid=os.geteuid() + 4242),
    ):
        pass
    if os.geteuid() == 0:
        os.chown(lock_path, NOBODY, NOBODY)
        with (
            pytest.raises(UnsafePathError, match=f"owned by uid {NOBODY}"),
            MaintenanceLock(lock_path),
        ):
            pass


def test_loose_lock_file_is_tightened(lock_path: Path) -> None:
    lock_path.touch()
    os.chmod(lock_path, 0o644)  # as flock(1) under umask 022 would create it
    with MaintenanceLock(lock_path):
        assert mode(lock_path) == 0o600


@pytest.mark.parametrize("loose", [0o755, 0o770, 0o701])
def test_loose_directory_refused(lock_path: Path, loose: int) -> None:
    os.chmod(lock_path.parent, loose)
    with pytest.raises(UnsafePathError, match="must be 0700"), MaintenanceLock(lock_path):
        pass


def test_missing_directory_refused(tmp_path: Path) -> None:
    with (
        pytest.raises(UnsafePathError, match="missing"),
        MaintenanceLock(tmp_path / "nope" / "maintenance.lock"),
    ):
        pass


def test_non_regular_lock_file_refused(lock_path: Path) -> None:
    os.mkfifo(lock_path, 0o600)
    with pytest.raises(UnsafePathError, match="not a regular file"), MaintenanceLock(lock_path):
        pass
