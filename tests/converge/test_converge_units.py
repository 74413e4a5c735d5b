"""The host convergence units: key directives, and `systemd-analyze verify` for real."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from magicstick_host.errors import ExitCode
from tests.test_units import FORBIDDEN, LEFT_OUT, minutes, needs_systemd_analyze, one, parse_unit

REPO = Path(__file__).resolve().parents[2]
UNITS = REPO / "units"
SERVICE = "magicstick-host-converge.service"
TIMER = "magicstick-host-converge.timer"


def test_the_service_runs_the_gate_as_root() -> None:
    service = parse_unit(UNITS / SERVICE)["Service"]
    assert one(service, "Type") == "oneshot"
    assert one(service, "User") == "root"
    assert one(service, "ExecStart") == "/usr/local/sbin/magicstick-host converge"
    assert "Restart" not in service and service.get("RemainAfterExit", ["no"]) == ["no"]
    statuses = set(one(service, "SuccessExitStatus").split())
    assert statuses == {str(int(ExitCode.BUSY)), str(int(ExitCode.WAITING))}
    # the worker stopped and a failed playbook stay failures
    assert not {str(int(ExitCode.STATE_BLOCKED)), str(int(ExitCode.EFFECT_FAILED))} & statuses


def test_the_service_outlasts_the_playbook_bound_and_lets_apt_finish() -> None:
    service = parse_unit(UNITS / SERVICE)["Service"]
    assert 30 < minutes(one(service, "TimeoutStartSec")) <= 60
    assert one(service, "KillMode") == "mixed"
    assert minutes(one(service, "TimeoutStopSec")) >= 10
    for key in FORBIDDEN + LEFT_OUT:
        assert key not in service, key
    env = dict(value.split("=", 1) for value in service["Environment"])
    assert env["MAGICSTICK_HOST_ROOT"] == "/" and env["LC_ALL"] == "C.UTF-8"
    assert env["DEBIAN_FRONTEND"] == "noninteractive"


def test_the_timer_runs_after_boot_and_after_each_run() -> None:
    unit = parse_unit(UNITS / TIMER)
    timer = unit["Timer"]
    assert minutes(one(timer, "OnBootSec")) > 0
    assert minutes(one(timer, "OnUnitInactiveSec")) == 15
    assert one(timer, "Unit") == SERVICE
    assert one(unit["Install"], "WantedBy") == "timers.target"
    assert not {"OnCalendar", "Persistent", "OnActiveSec"} & set(timer)


def test_install_ships_and_enables_them() -> None:
    defaults = yaml.safe_load((REPO / "playbooks/roles/install/defaults/main.yml").read_text())
    assert {SERVICE, TIMER} <= set(defaults["magicstick_units"])
    assert defaults["magicstick_converge_timer"] == TIMER
    assert defaults["magicstick_enable_converge_timer"] is True
    service = parse_unit(UNITS / SERVICE)["Service"]
    assert service["ExecStart"] == [f"{defaults['magicstick_wrapper']} converge"]


@pytest.mark.real_commands
@needs_systemd_analyze
def test_systemd_analyze_verify(tmp_path: Path) -> None:
    stub = tmp_path / "magicstick-host"
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    paths = []
    for name in (SERVICE, TIMER):
        text = (UNITS / name).read_text().replace("/usr/local/sbin/magicstick-host", str(stub))
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    env = {**os.environ, "SYSTEMD_LOG_COLOR": "0", "SYSTEMD_PAGER": "cat"}
    proc = subprocess.run(["systemd-analyze", "verify", "--man=no", *paths], capture_output=True,
                          text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = (proc.stdout + proc.stderr).splitlines()
    assert [line for line in lines if "magicstick-host" in line] == []
