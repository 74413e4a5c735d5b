"""HostFS.lock_holder: who holds dpkg's or apt's lock, asked as apt asks it (fcntl) but taking
nothing. Real locks, held by real processes: the classic record lock apt and dpkg take
(lockf/F_SETLK) and an open file description lock, whose holder the kernel does not show."""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from magicstick_host.ports.hostfs import HostReadError, RootedHostFS

pytestmark = pytest.mark.real_commands

LOCK = "/var/lib/dpkg/lock-frontend"
HOLD = """
import fcntl, sys
with open(sys.argv[1], "a") as lock:
    fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("held", flush=True)
    sys.stdin.read()
"""
F_OFD_SETLK = 37  # linux/fcntl.h


def root_with_lock(tmp_path: Path) -> Path:
    (tmp_path / "var/lib/dpkg").mkdir(parents=True)
    (tmp_path / LOCK.lstrip("/")).touch()
    return tmp_path


def test_a_free_or_absent_lock_is_nobody_s(tmp_path: Path) -> None:
    fs = RootedHostFS(str(root_with_lock(tmp_path)))
    assert fs.lock_holder(LOCK) is None
    assert fs.lock_holder("/var/lib/dpkg/lock") is None  # absent
    assert fs.lock_holder("/no/such/dir/lock") is None


def test_a_held_lock_names_its_holder_and_the_probe_takes_nothing(tmp_path: Path) -> None:
    root = root_with_lock(tmp_path)
    fs = RootedHostFS(str(root))
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(root / LOCK.lstrip("/"))],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        assert fs.lock_holder(LOCK) == holder.pid
        assert fs.lock_holder(LOCK) == holder.pid  # asking twice changes nothing
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)
    assert fs.lock_holder(LOCK) is None
    # the probe took no lock: another process can take it at once
    with open(root / LOCK.lstrip("/"), "a") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_an_open_file_description_lock_is_held_by_someone_unnamed(tmp_path: Path) -> None:
    root = root_with_lock(tmp_path)
    fd = os.open(root / LOCK.lstrip("/"), os.O_RDWR)
    try:
        fcntl.fcntl(fd, F_OFD_SETLK,
                    struct.pack("@hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0).ljust(32, b"\0"))
        # even from this process: an OFD lock conflicts with the probe's own description
        assert RootedHostFS(str(root)).lock_holder(LOCK) == 0
    finally:
        os.close(fd)


def test_what_is_not_a_lock_file_cannot_be_told(tmp_path: Path) -> None:
    (tmp_path / "var/lib/dpkg/lock-frontend").mkdir(parents=True)
    with pytest.raises(HostReadError) as err:
        RootedHostFS(str(tmp_path)).lock_holder(LOCK)
    assert err.value.reason == "not a regular file"
    (tmp_path / "run").mkdir()
    (tmp_path / "run/unattended-upgrades.lock").symlink_to("../../../etc/passwd")
    with pytest.raises(HostReadError) as err:
        RootedHostFS(str(tmp_path)).lock_holder("/run/unattended-upgrades.lock")
    assert err.value.reason == "symlink escapes root"
