"""The maintenance lock handed down to ansible-playbook (effects/converge.py, RealRunner).

A stand-in `ansible-playbook` on PATH checks what it inherited: MAGICSTICK_CONVERGE_LOCK_FD
names an open descriptor that holds the lock (re-locking that same open file succeeds, a fresh
open of maintenance.lock does not). Then the converging process is SIGKILLed half way: the
lock must stay held until the playbook itself ends, so no tick starts under it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from magicstick_host.errors import LockBusyError
from magicstick_host.ports.lock import MaintenanceLock

pytestmark = pytest.mark.real_commands

FAKE_PLAYBOOK = """#!{python}
import fcntl, os, sys, time
from pathlib import Path
work = Path({work!r})
fd = int(os.environ["MAGICSTICK_CONVERGE_LOCK_FD"])
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the same open file: already ours
other = os.open(work / "state" / "maintenance.lock", os.O_RDONLY)
try:
    fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    verdict = "NOT HELD"
except BlockingIOError:
    verdict = "held"
(work / "verdict").write_text(verdict + " " + " ".join(sys.argv[1:]))
while not (work / "release").exists():
    time.sleep(0.05)
print("PLAY RECAP")
"""

CONVERGER = """
import sys
from pathlib import Path
from magicstick_host.converge import ConvergeDeps, run_converge
from magicstick_host.ports.clock import RealClock
from magicstick_host.ports.hostfs import RootedHostFS
from magicstick_host.ports.runner import RealRunner
from magicstick_host.ports.state_store import FileStateStore
work = Path(sys.argv[1])
state = work / "state"
result = run_converge(ConvergeDeps(
    fs=RootedHostFS(str(work / "root")), runner=RealRunner(), clock=RealClock(),
    store=FileStateStore(state), lock_path=state / "maintenance.lock",
    playbooks_dir=work / "playbooks", timeout_s=120, variables={}))
print(int(result.exit_code), result.summary)
"""


def wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def lock_is_free(state: Path) -> bool:
    try:
        with MaintenanceLock(state / "maintenance.lock"):
            return True
    except LockBusyError:
        return False


def setup_work(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    work = tmp_path / "w"
    (work / "state").mkdir(parents=True, mode=0o700)
    (work / "root/proc/sys/kernel/random").mkdir(parents=True)
    (work / "root/proc/sys/kernel/random/boot_id").write_text(
        "0f6c2a8e-3d6b-4c49-9e59-2d5f6f3f0a11\n")
    bin_dir = work / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ansible-playbook"
    fake.write_text(FAKE_PLAYBOOK.format(python=sys.executable, work=str(work)))
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    return work, env


def test_the_playbook_inherits_the_held_lock_and_runs_the_convergence_playbook(
    tmp_path: Path,
) -> None:
    work, env = setup_work(tmp_path)
    (work / "release").write_text("")
    proc = subprocess.run([sys.executable, "-c", CONVERGER, str(work)], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("0 converged"), proc.stdout
    verdict = (work / "verdict").read_text()
    assert verdict.startswith("held ")
    assert f"{work}/playbooks/converge.yml -e @{work}/state/vars/converge.json" in verdict
    assert lock_is_free(work / "state")


def test_the_lock_outlives_a_killed_converger_until_the_playbook_ends(tmp_path: Path) -> None:
    work, env = setup_work(tmp_path)
    converger = subprocess.Popen([sys.executable, "-c", CONVERGER, str(work)], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(work / "verdict")
        assert (work / "verdict").read_text().startswith("held ")
        os.kill(converger.pid, signal.SIGKILL)
        converger.wait(timeout=30)
        # the playbook still runs and still holds the lock: a tick would exit busy
        assert not lock_is_free(work / "state")
    finally:
        (work / "release").write_text("")
    deadline = time.monotonic() + 30
    while not lock_is_free(work / "state"):
        assert time.monotonic() < deadline, "the lock was never released"
        time.sleep(0.05)
