"""The network units: the rollback service the trial's transient timer starts, the boot
recovery before the network, and that transient timer itself, all through the real
`systemd-analyze verify`; their key directives agree with the code."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from magicstick_host.effects.network import ROLLBACK_UNIT, rollback_timer_argv
from magicstick_host.ports.network_store import NETWORK_DIR, TRIAL_FILE
from tests.test_units import UNITS, complaints, one, parse_unit

ROLLBACK = f"{ROLLBACK_UNIT}.service"
RECOVERY = "magicstick-host-network-recovery.service"
STATE_DIR = "/var/lib/magicstick/host-management"


def test_rollback_service_is_started_only_by_the_trial_timer() -> None:
    unit = parse_unit(UNITS / ROLLBACK)
    service = unit["Service"]
    assert one(service, "Type") == "oneshot" and one(service, "User") == "root"
    assert one(service, "ExecStart") == "/usr/local/sbin/magicstick-host network-rollback"
    assert "Install" not in unit  # never enabled: only the transient timer starts it
    # busy (the trial lock) is retried, and the start limit never ends the retries
    assert one(service, "Restart") == "on-failure"
    assert one(unit["Unit"], "StartLimitIntervalSec") == "0"
    # no ordering after the network or k3s: it must run when both are broken
    assert "After" not in unit["Unit"] or "network" not in " ".join(unit["Unit"]["After"])


def test_boot_recovery_runs_before_the_network_only_with_a_trial_record() -> None:
    unit = parse_unit(UNITS / RECOVERY)
    head = unit["Unit"]
    assert one(head, "DefaultDependencies") == "no"
    before = " ".join(head["Before"]).split()
    assert {"network-pre.target", "systemd-networkd.service", "NetworkManager.service"} <= set(
        before)
    assert one(head, "ConditionPathExists") == f"{STATE_DIR}/{NETWORK_DIR}/{TRIAL_FILE}"
    assert one(unit["Service"], "ExecStart") == (
        "/usr/local/sbin/magicstick-host network-recovery")
    assert "network-pre.target" in one(unit["Install"], "WantedBy").split()


def test_the_timer_is_transient_and_names_the_installed_service() -> None:
    argv = rollback_timer_argv(180)
    assert argv[0] == "systemd-run" and f"--unit={ROLLBACK_UNIT}" in argv
    assert "--on-active=180s" in argv
    # no command: systemd-run then only makes the timer for the installed service
    assert [a for a in argv[1:] if not a.startswith("--")] == []


def _transient_timer(argv: list[str]) -> str:
    """The timer unit systemd-run --on-active makes, written out for verify."""
    props = [a.removeprefix("--timer-property=") for a in argv if a.startswith("--timer-property=")]
    seconds = next(a.removeprefix("--on-active=") for a in argv if a.startswith("--on-active="))
    lines = ["[Unit]", "Description=transient rollback timer", "[Timer]",
             f"OnActiveSec={seconds}", *props, f"Unit={ROLLBACK}"]
    return "\n".join(lines) + "\n"


def _installed_copies(dest: Path) -> Path:
    dest.mkdir()
    stub = dest / "magicstick-host"
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    for name in (ROLLBACK, RECOVERY):
        text = (UNITS / name).read_text().replace("/usr/local/sbin/magicstick-host", str(stub))
        (dest / name).write_text(text)
    (dest / f"{ROLLBACK_UNIT}.timer").write_text(_transient_timer(rollback_timer_argv(180)))
    return dest


def verify(paths: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["systemd-analyze", "verify", "--man=no", *map(str, paths)],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={"SYSTEMD_LOG_COLOR": "0", "PATH": "/usr/bin:/bin"})


@pytest.mark.real_commands
def test_systemd_analyze_verify(tmp_path: Path) -> None:
    units = _installed_copies(tmp_path / "units")
    proc = verify([units / ROLLBACK, units / RECOVERY, units / f"{ROLLBACK_UNIT}.timer"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    noise = [line for line in (proc.stdout + proc.stderr).splitlines()
             if "magicstick" in line or "transient" in line]
    assert noise == [] and complaints(proc) == []


@pytest.mark.real_commands
def test_verify_catches_a_bad_unit(tmp_path: Path) -> None:
    units = _installed_copies(tmp_path / "units")
    path = units / RECOVERY
    path.write_text(path.read_text().replace("DefaultDependencies=no", "DefaultDependencis=no"))
    assert "DefaultDependencis" in " ".join(complaints(verify([path])))
