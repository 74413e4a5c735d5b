"""End to end: the real gate, the real ansible-playbook and the real roles on a simulated host.

`run_converge` with the real command runner runs playbooks/converge.yml (the lock handed down)
against a simulated NVIDIA display host of a new install (apt and the K3s installer skipped,
the host's commands are stand-ins under the root: tests/playbooks/converge_roots.py). The first
run schedules the one reboot; the scheduled shutdown then makes the gate wait; after the reboot
a run changes nothing. `status` shows each run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from magicstick_host import app_console, schemas
from magicstick_host.converge import ConvergeDeps, run_converge
from magicstick_host.errors import ExitCode
from magicstick_host.ports.clock import RealClock
from magicstick_host.ports.hostfs import RootedHostFS
from magicstick_host.ports.runner import RealRunner
from magicstick_host.ports.state_store import FileStateStore
from tests.playbooks.conftest import PLAYBOOKS, ansible_env
from tests.playbooks.converge_roots import (
    calls,
    make_root,
    reboot_happened,
    without_nvidia_packages,
)

pytestmark = [pytest.mark.real_commands, pytest.mark.slow]


@pytest.fixture
def hermetic_ansible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "ansible-home"
    home.mkdir()
    for key, value in ansible_env(home).items():
        monkeypatch.setenv(key, value)
    # the worker runs `ansible-playbook` by name: this venv's
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")


def status(state_dir: Path) -> dict[str, Any]:
    doc = app_console.status_document(str(state_dir), "magicstick")
    assert schemas.errors("status", doc) == []
    return doc


@pytest.mark.usefixtures("hermetic_ansible")
def test_first_convergence_reboots_once_then_waits_then_changes_nothing(tmp_path: Path) -> None:
    root = make_root(tmp_path / "root", "strix-halo-nvidia-unbound-ubuntu-26.04-ready",
                     change=without_nvidia_packages)
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    deps = ConvergeDeps(
        fs=RootedHostFS(str(root)),
        runner=RealRunner(),
        clock=RealClock(),
        store=FileStateStore(state_dir),
        lock_path=state_dir / "maintenance.lock",
        playbooks_dir=PLAYBOOKS,
        timeout_s=600,
        variables={"magicstick_root": str(root), "magicstick_apply": False},
    )
    first = run_converge(deps)
    assert first.exit_code == ExitCode.OK, first.summary
    run = status(state_dir)["convergence"]
    assert run["result"] == "succeeded" and run["rebootScheduled"] is True
    assert "nvidia_display : Set the nvidia-drm options (modprobe.d)" in run["changedTasks"]
    assert "the one reboot after the first convergence is scheduled" in run["message"]
    assert len(calls(root, "shutdown")) == 1

    waiting = run_converge(deps)  # the reboot is pending: the gate holds convergence back
    assert waiting.exit_code == ExitCode.WAITING and "reboot is scheduled" in waiting.summary

    reboot_happened(root)
    again = run_converge(deps)
    assert again.exit_code == ExitCode.OK, again.summary
    run = status(state_dir)["convergence"]
    assert run["changedTasks"] == [] and run["rebootScheduled"] is False
    assert "nothing changed" in run["message"]
    assert len(calls(root, "shutdown")) == 1
    events = [e["event"] for e in FileStateStore(state_dir).read_journal()]
    assert events == ["converge-started", "converge-finished"] * 2
    log = (state_dir / "logs/converge.log").read_text()
    assert "PLAY RECAP" in log and "changed=0" in log  # the last run's log only
