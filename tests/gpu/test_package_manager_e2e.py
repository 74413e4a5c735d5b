"""prepare-gpu through the real tick while another package manager run holds the host: a real
process holds dpkg's lock of the simulated root (fcntl, as apt and dpkg take it), named in the
root's /proc as unattended-upgrades would be. The worker probes the lock as apt would, taking
nothing; the simulator's apt meets it as apt would. Against the real test apiserver.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from magicstick_host.sim.writer import load_host, write_host
from tests.gpu.test_prepare_end_to_end import fresh_module_activation, prepare  # noqa: F401
from tests.harness.world import World

pytestmark = [pytest.mark.apiserver, pytest.mark.real_commands]

OLD_KERNEL = "strix-halo-ubuntu-26.04-old-kernel"
HOLD = """
import fcntl, sys, time
with open(sys.argv[1], "a") as lock:
    fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("held", flush=True)
    sys.stdin.read()
"""


class Holder:
    """A process that holds a lock file of the simulated root until `release()`."""

    def __init__(self, root: Path, lock: str = "/var/lib/dpkg/lock-frontend",
                 command: str = "unattended-upgr") -> None:
        path = root / lock.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None and self.proc.stdout.readline() == b"held\n"
        self.pid = self.proc.pid
        # what the root's /proc says of it, as the host's /proc says of unattended-upgrades
        comm = root / "proc" / str(self.pid) / "comm"
        comm.parent.mkdir(parents=True, exist_ok=True)
        comm.write_text(command + "\n")

    def release(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(10)


@contextmanager
def held(root: Path, **kw: Any) -> Iterator[Holder]:
    holder = Holder(root, **kw)
    try:
        yield holder
    finally:
        holder.release()


def drive(world: World, max_ticks: int = 20) -> list[str]:
    phases: list[str] = []
    for _ in range(max_ticks):
        world.tick()
        phases.append(world.phase())
        if load_host(world.root).shutdown is not None:
            world.boot()
        if world.phase() == "Registering":
            world.registered()
        if world.phase() in ("Succeeded", "Failed", "Interrupted"):
            break
    return phases


def status(world: World) -> dict[str, Any]:
    return dict((world.hostop() or {}).get("status") or {})


def test_the_preparation_waits_for_the_run_then_installs(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, OLD_KERNEL)
    world.tick()
    with held(world.root) as holder:
        prepare(world)  # accepted while the host is busy: its plan is the one reviewed
        for _ in range(4):
            world.tick()
        assert world.phase() == "Preparing"
        message = status(world)["message"]
        assert message.startswith(
            f"Waiting for another package manager run to finish (unattended-upgr, pid "
            f"{holder.pid}); nothing has been installed.")
        assert world.playbooks("prepare.yml") == []
        report = world.report()
        assert report is not None and report["operation"]["message"] == message
    phases = drive(world)
    assert phases[-1] == "Succeeded", phases
    assert len(world.playbooks("prepare.yml")) == 1


def test_a_run_that_changed_the_packages_fails_with_nothing_installed(
        tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, OLD_KERNEL)
    world.tick()
    with held(world.root):
        prepare(world)
        world.tick()
        # that run installs another kernel meta version than the plan was made from
        host = load_host(world.root)
        meta = host.package("linux-generic")
        assert meta is not None
        meta.version = "6.17.0-15.15"
        write_host(host, world.root)
        world.tick()
        assert world.phase() == "Preparing"
    world.tick()
    assert world.phase() == "Failed"
    assert "The packages changed since the plan was reviewed" in status(world)["message"]
    assert world.playbooks("prepare.yml") == []


def test_the_wait_is_bounded(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, OLD_KERNEL)
    world.tick()
    with held(world.root):
        prepare(world)
        world.tick()
        world.tick(advance_s=1790.0)
        assert world.phase() == "Preparing"
        world.tick(advance_s=30.0)
        world.tick()
        assert world.phase() == "Failed"
    assert status(world)["message"].startswith(
        "The package manager stayed busy for 30 minutes; nothing was installed.")
    assert world.playbooks("prepare.yml") == []


def test_a_run_that_starts_after_the_check_meets_apt_s_lock_and_nothing_is_retried(
        tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, OLD_KERNEL)
    world.tick()
    prepare(world)
    world.tick()
    holders: list[Holder] = []

    def race(point: str) -> None:
        # between the worker's check and apt's own: the run begins as the playbook starts
        if point == "before-effect:install-packages":
            holders.append(Holder(world.root, command="apt-get"))

    try:
        world.tick(crash=race)
    finally:
        for holder in holders:
            holder.release()
    assert holders, "the install step was reached"
    assert world.phase() == "Failed"
    runs = world.playbooks("prepare.yml")
    assert len(runs) == 1 and runs[0]["rc"] != 0
    assert "Could not get lock /var/lib/dpkg/lock-frontend" in status(world)["message"]
    host = load_host(world.root)
    meta = host.package("linux-generic")
    assert meta is not None and meta.version != "7.0.0-31.31"
    for _ in range(3):
        world.tick()
    assert len(world.playbooks("prepare.yml")) == 1
