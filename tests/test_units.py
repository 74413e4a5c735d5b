"""The systemd units in units/: their key directives, and `systemd-analyze verify` for real."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from magicstick_host.errors import ExitCode

REPO = Path(__file__).resolve().parents[1]
UNITS = REPO / "units"
SERVICE = "magicstick-host-management.service"
TIMER = "magicstick-host-management.timer"

# host-facts.md: these break apt, update-initramfs, sysfs writes or device access.
FORBIDDEN = ("ProtectSystem", "ProtectKernelTunables", "ProtectKernelModules", "PrivateDevices")
# Also left out on purpose; the reasons are in the unit file's header comment.
LEFT_OUT = (
    "ProtectClock",
    "ProtectHome",
    "NoNewPrivileges",
    "DeviceAllow",
    "DevicePolicy",
    "UMask",
    "RestrictSUIDSGID",
    "SystemCallFilter",
    "CapabilityBoundingSet",
)


def parse_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """Section -> key -> every value, in order (systemd keys may repeat, e.g. Environment=)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        assert not line.endswith("\\"), f"{path.name}:{number}: keep directives on one line"
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None and "=" in line, f"{path.name}:{number}: {raw!r}"
        key, value = (part.strip() for part in line.split("=", 1))
        current.setdefault(key, []).append(value)
    return sections


def one(section: dict[str, list[str]], key: str) -> str:
    values = section.get(key, [])
    assert len(values) == 1, f"{key}= must be set exactly once, got {values}"
    return values[0]


def minutes(span: str) -> float:
    """A systemd time span made of units we use here ("45min", "1h 30min", "90s")."""
    factors = {"h": 60.0, "min": 1.0, "m": 1.0, "s": 1 / 60}
    parts = re.findall(r"(\d+)\s*(h|min|m|s)\b", span)
    assert parts and "".join(n + u for n, u in parts) == span.replace(" ", ""), span
    return sum(int(n) * factors[u] for n, u in parts)


def test_service_runs_one_tick_as_root() -> None:
    unit = parse_unit(UNITS / SERVICE)
    service = unit["Service"]
    assert one(service, "Type") == "oneshot"
    assert one(service, "User") == "root"
    assert one(service, "ExecStart") == "/usr/local/sbin/magicstick-host tick"
    # OnUnitInactiveSec= needs the unit to become inactive after each tick
    assert service.get("RemainAfterExit", ["no"]) == ["no"]
    # no Restart=: the timer is the only thing that starts a tick
    assert "Restart" not in service


def test_busy_and_waiting_count_as_success() -> None:
    statuses = one(parse_unit(UNITS / SERVICE)["Service"], "SuccessExitStatus").split()
    assert str(int(ExitCode.BUSY)) in statuses
    assert str(int(ExitCode.WAITING)) in statuses
    assert {"75", "76"} <= set(statuses)


def test_reported_conditions_count_as_success_and_failed_effects_and_bugs_fail_the_unit() -> None:
    """A condition the worker logs itself, once, and that outlasts the tick (an API outage, a
    blocked state) is no unit failure every 15 s; a failed effect and a bug are."""
    statuses = {int(s) for s in one(parse_unit(UNITS / SERVICE)["Service"],
                                    "SuccessExitStatus").split()}
    assert statuses == {
        ExitCode.BAD_INPUT, ExitCode.STATE_BLOCKED, ExitCode.KUBE_UNAVAILABLE,
        ExitCode.LOCAL_IO, ExitCode.BUSY, ExitCode.WAITING,
    }  # fmt: skip
    assert ExitCode.EFFECT_FAILED not in statuses and ExitCode.INTERNAL not in statuses


def test_start_timeout_outlasts_the_30_minute_playbook_step() -> None:
    timeout = minutes(one(parse_unit(UNITS / SERVICE)["Service"], "TimeoutStartSec"))
    assert 30 < timeout <= 60


def test_a_stop_lets_a_running_apt_finish_instead_of_killing_dpkg() -> None:
    service = parse_unit(UNITS / SERVICE)["Service"]
    assert one(service, "KillMode") == "mixed"  # SIGTERM to the tick only
    assert minutes(one(service, "TimeoutStopSec")) >= 10


def test_hardening_keeps_apt_initramfs_sysfs_and_devices_working() -> None:
    service = parse_unit(UNITS / SERVICE)["Service"]
    for key in FORBIDDEN + LEFT_OUT:
        assert key not in service, f"{key}= must not be set (see the unit's header comment)"
    for key in ("PrivateTmp", "ProtectHostname", "LockPersonality", "RestrictRealtime"):
        assert one(service, key) == "yes", key


def test_service_environment_and_ordering() -> None:
    unit = parse_unit(UNITS / SERVICE)
    env = dict(value.split("=", 1) for value in unit["Service"]["Environment"])
    assert env["MAGICSTICK_HOST_ROOT"] == "/"
    assert env["LC_ALL"] == "C.UTF-8"
    assert env["DEBIAN_FRONTEND"] == "noninteractive"
    after = " ".join(unit["Unit"]["After"]).split()
    assert {"network-online.target", "k3s.service"} <= set(after)
    # ordering only: an agent node has no k3s.service
    assert "k3s.service" not in " ".join(unit["Unit"].get("Requires", []))
    assert "k3s.service" not in " ".join(unit["Unit"].get("Wants", []))


def test_per_run_noise_is_filtered_and_the_workers_own_lines_pass() -> None:
    """LogLevelMax= drops PID 1's per-run info lines about the unit; the worker's transitions
    (notice, by their <5> prefix) and anything unprefixed (notice, SyslogLevel=) still pass."""
    service = parse_unit(UNITS / SERVICE)["Service"]
    assert one(service, "LogLevelMax") == "notice"
    assert one(service, "SyslogLevel") == "notice"
    assert service.get("SyslogLevelPrefix", ["yes"]) == ["yes"]
    # where the worker remembers what it last logged; kept between ticks, gone at reboot
    assert one(service, "RuntimeDirectory") == "magicstick-host"
    assert one(service, "RuntimeDirectoryPreserve") == "yes"
    assert one(service, "RuntimeDirectoryMode") == "0700"


def test_timer_fires_after_boot_and_15s_after_each_tick() -> None:
    unit = parse_unit(UNITS / TIMER)
    timer = unit["Timer"]
    assert one(timer, "OnUnitInactiveSec") == "15s"
    assert one(timer, "AccuracySec") == "1s"
    assert minutes(one(timer, "OnBootSec")) > 0
    assert one(timer, "Unit") == SERVICE
    assert one(unit["Install"], "WantedBy") == "timers.target"
    # calendar or persistent schedules would fire ticks on top of the 15 s rhythm
    assert not {"OnCalendar", "Persistent", "OnActiveSec"} & set(timer)


def test_playbook_and_unit_agree_on_paths() -> None:
    """playbooks/install.yml installs the command and the profiles where the unit expects them."""
    defaults = yaml.safe_load((REPO / "playbooks/roles/install/defaults/main.yml").read_text())
    service = parse_unit(UNITS / SERVICE)["Service"]
    assert service["ExecStart"] == [f"{defaults['magicstick_wrapper']} tick"]
    env = dict(line.split("=", 1) for line in service["Environment"])
    assert env["MAGICSTICK_HOST_PROFILES"] == f"{defaults['magicstick_lib_dir']}/profiles"
    assert defaults["magicstick_timer"] in defaults["magicstick_units"]
    shipped = sorted(p.name for p in UNITS.iterdir())
    assert sorted(defaults["magicstick_units"]) == shipped


# --- systemd-analyze verify -------------------------------------------------------------------


def verify(unit_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SYSTEMD_LOG_COLOR": "0", "SYSTEMD_PAGER": "cat"}
    return subprocess.run(
        ["systemd-analyze", "verify", "--man=no",
         str(unit_dir / SERVICE), str(unit_dir / TIMER)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def units_with_runnable_exec(dest: Path) -> Path:
    """Copies of the units whose ExecStart binary exists: verify checks that it is executable,
    and /usr/local/sbin/magicstick-host exists only on an installed host."""
    dest.mkdir()
    stub = dest / "magicstick-host"
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    for name in (SERVICE, TIMER):
        text = (UNITS / name).read_text()
        (dest / name).write_text(text.replace("/usr/local/sbin/magicstick-host", str(stub)))
    return dest


def complaints(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """verify exits 0 even for unknown keys or bad values: its messages are the signal."""
    lines = (proc.stdout + proc.stderr).splitlines()
    return [line for line in lines if "magicstick-host" in line]


needs_systemd_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed"
)


@pytest.mark.real_commands
@needs_systemd_analyze
def test_systemd_analyze_verify(tmp_path: Path) -> None:
    proc = verify(units_with_runnable_exec(tmp_path / "units"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert complaints(proc) == []


@pytest.mark.real_commands
@needs_systemd_analyze
def test_systemd_analyze_verify_would_catch_a_typo(tmp_path: Path) -> None:
    """The check above is not vacuous: a misspelt key or a bad time span is reported."""
    unit_dir = units_with_runnable_exec(tmp_path / "units")
    service = unit_dir / SERVICE
    service.write_text(service.read_text() + "ProtectHostnam=yes\n")
    timer = unit_dir / TIMER
    timer.write_text(timer.read_text().replace("OnUnitInactiveSec=15s", "OnUnitInactiveSec=15q"))
    found = " ".join(complaints(verify(unit_dir)))
    assert "ProtectHostnam" in found
    assert "15q" in found
