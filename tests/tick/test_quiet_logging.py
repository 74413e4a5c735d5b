"""Quiet when idle, loud when it matters (issue 10, item 7): the real CLI in fresh processes, as
the timer runs it (its output is the journal stream, its runtime directory kept between ticks),
on a simulated host against the real apiserver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from magicstick_host.errors import ExitCode
from tests.harness.world import World

pytestmark = [pytest.mark.apiserver, pytest.mark.real_commands]

READY = "strix-halo-ubuntu-26.04-ready"
REPO = Path(__file__).resolve().parents[2]


class Timer:
    """Runs `magicstick-host tick` the way magicstick-host-management.service does: stdout and
    stderr are one journal stream ($JOURNAL_STREAM names it) and $RUNTIME_DIRECTORY persists."""

    def __init__(self, world: World, tmp: Path, *, runtime: bool = True,
                 journal: bool = True) -> None:
        self.world = world
        self.journal = journal
        self.tmp = tmp
        self.runtime = tmp / "run" if runtime else None
        if self.runtime is not None:
            self.runtime.mkdir(mode=0o700)
        self.kubeconfig = Path(world.kube.worker_kubeconfig)
        self.runs = 0

    def tick(self) -> tuple[int, list[str]]:
        self.runs += 1
        journal = self.tmp / f"journal-{self.runs}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("MAGICSTICK_HOST_")}
        env.update(
            MAGICSTICK_HOST_ROOT=str(self.world.root),
            MAGICSTICK_HOST_EXECUTOR="sim",
            MAGICSTICK_HOST_STATE_DIR=str(self.world.state_dir),
            MAGICSTICK_HOST_KUBECONFIG=str(self.kubeconfig),
            MAGICSTICK_HOST_NODE_NAME=self.world.node_name,
        )
        env.pop("RUNTIME_DIRECTORY", None)
        if self.runtime is not None:
            env["RUNTIME_DIRECTORY"] = str(self.runtime)
        with open(journal, "w") as stream:
            st = os.fstat(stream.fileno())
            env.pop("JOURNAL_STREAM", None)
            if self.journal:
                env["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"
            done = subprocess.run(
                [sys.executable, "-m", "magicstick_host", "tick"],
                stdout=stream, stderr=stream, env=env, cwd=REPO, timeout=120, check=False,
            )  # fmt: skip
        return done.returncode, journal.read_text().splitlines()

    def unreachable(self) -> None:
        config = yaml.safe_load(Path(self.world.kube.worker_kubeconfig).read_text())
        config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
        self.kubeconfig = self.tmp / "unreachable.kubeconfig"
        self.kubeconfig.write_text(json.dumps(config))

    def reachable(self) -> None:
        self.kubeconfig = Path(self.world.kube.worker_kubeconfig)


def world_and_timer(tmp_path: Path, kube: Any, **kw: Any) -> tuple[World, Timer]:
    world = World(tmp_path / "w", kube, READY)
    return world, Timer(world, tmp_path, **kw)


def test_an_idle_tick_logs_nothing(tmp_path: Path, kube: Any) -> None:
    _, timer = world_and_timer(tmp_path, kube)
    for _ in range(3):  # the first also publishes the report
        assert timer.tick() == (ExitCode.OK, [])


def test_a_transition_is_logged_once_with_its_request_id_at_notice(
    tmp_path: Path, kube: Any
) -> None:
    world, timer = world_and_timer(tmp_path, kube)
    assert timer.tick() == (ExitCode.OK, [])
    request_id = world.create_request("reboot")["spec"]["requestId"]
    code, lines = timer.tick()
    assert code == ExitCode.OK
    assert len(lines) == 3  # accepted, the step begins, the step is done
    for line in lines:
        assert line.startswith(f"<5>magicstick-host: reboot request {request_id}")
    assert "accepted" in lines[0] and "RebootScheduled" in lines[-1]
    assert timer.tick() == (ExitCode.OK, [])  # waiting for the restart: nothing new


def test_a_refusal_is_logged_once_as_a_warning(tmp_path: Path, kube: Any) -> None:
    world, timer = world_and_timer(tmp_path, kube)
    timer.tick()
    request_id = world.create_request("reboot", bootId="another-boot")["spec"]["requestId"]
    code, lines = timer.tick()
    assert code == ExitCode.OK
    assert lines == [
        f"<4>magicstick-host: request {request_id} rejected: The request was approved for a "
        "different boot of this host (it has restarted since); no action was executed. Review "
        "the host again and create a new request."
    ]
    assert timer.tick() == (ExitCode.OK, [])


def test_a_lasting_condition_is_logged_when_it_starts_and_when_it_ends(
    tmp_path: Path, kube: Any
) -> None:
    _, timer = world_and_timer(tmp_path, kube)
    assert timer.tick() == (ExitCode.OK, [])
    timer.unreachable()
    code, lines = timer.tick()
    assert code == ExitCode.KUBE_UNAVAILABLE
    (started,) = lines
    assert started.startswith("<4>magicstick-host: Kubernetes cannot be reached")
    for _ in range(3):  # an hour of this would be 240 ticks: none says it again
        assert timer.tick() == (ExitCode.KUBE_UNAVAILABLE, [])
    timer.reachable()
    code, lines = timer.tick()
    assert code == ExitCode.OK
    assert lines == [
        "<5>magicstick-host: no longer the case: " + started.removeprefix("<4>magicstick-host: ")
    ]
    assert timer.tick() == (ExitCode.OK, [])


def test_at_the_console_a_condition_is_said_every_time_and_without_levels(
    tmp_path: Path, kube: Any
) -> None:
    _, timer = world_and_timer(tmp_path, kube, runtime=False, journal=False)
    timer.unreachable()
    for _ in range(2):
        code, lines = timer.tick()
        assert code == ExitCode.KUBE_UNAVAILABLE
        assert len(lines) == 1 and lines[0].startswith("magicstick-host: Kubernetes")
