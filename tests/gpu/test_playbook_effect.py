"""The playbook effect: bounded, logged 0600, names the failed task, keeps the report fresh."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from magicstick_host.effects import EffectPorts
from magicstick_host.effects import playbook as effect
from magicstick_host.ports.hostfs import RootedHostFS
from magicstick_host.ports.runner import CommandResult

FAILED_LOG = """
PLAY [Prepare a Strix Halo host] ***********************************************

TASK [prepare : Check the package gate] ****************************************
ok: [localhost]

TASK [prepare : Install the approved kernel packages] **************************
fatal: [localhost]: FAILED! => {"changed": false, "msg": "E: Version '7.0.0-31.31' for 'l..."}

PLAY RECAP *********************************************************************
localhost                  : ok=1    changed=0    unreachable=0    failed=1
"""


class SlowRunner:
    """Takes `seconds`, writes `log` to the stdout file, exits `code`."""

    def __init__(self, seconds: float, log: str, code: int) -> None:
        self.seconds, self.log, self.code = seconds, log, code
        self.argv: tuple[str, ...] = ()

    def run(self, argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None,
            stdout_path: str | None = None) -> CommandResult:
        self.argv = tuple(argv)
        time.sleep(self.seconds)
        assert stdout_path is not None
        with open(stdout_path, "a", encoding="utf-8") as out:
            out.write(self.log)
        return CommandResult(self.argv, self.code, "", "")


def ports(tmp_path: Path, runner: SlowRunner, beats: list[float]) -> EffectPorts:
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700, exist_ok=True)
    return EffectPorts(
        runner=runner, kube=None, hostfs=RootedHostFS(str(tmp_path)),
        playbooks_dir=Path("/opt/playbooks"), work_dir=tmp_path,
        log_path=lambda uid: logs / f"{uid}.log", playbook_timeout_s=60,
        heartbeat=lambda: beats.append(time.monotonic()),
    )


def test_a_long_run_keeps_publishing_and_a_failure_names_the_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(effect, "HEARTBEAT_S", 0.05)
    beats: list[float] = []
    runner = SlowRunner(0.4, FAILED_LOG, 2)
    ok, detail = effect.run_playbook(ports(tmp_path, runner, beats), "prepare.yml", "uid-1",
                                     {"magicstick_packages": {"linux-generic": "7.0.0-31.31"}})
    assert not ok
    assert "the task 'Install the approved kernel packages' failed" in detail
    assert str(tmp_path / "logs" / "uid-1.log") in detail
    assert len(beats) >= 3  # the report was refreshed while the playbook ran
    log = tmp_path / "logs" / "uid-1.log"
    assert log.stat().st_mode & 0o777 == 0o600
    vars_file = tmp_path / "vars" / "uid-1-prepare.yml.json"
    assert vars_file.stat().st_mode & 0o777 == 0o600
    assert runner.argv[-2:] == ("-e", f"@{vars_file}")
    assert runner.argv[:5] == ("ansible-playbook", "-i", "localhost,", "-c", "local")


def test_a_success_points_to_the_log(tmp_path: Path) -> None:
    ok, detail = effect.run_playbook(ports(tmp_path, SlowRunner(0, "PLAY RECAP\n", 0), []),
                                     "memory.yml", "uid-2", {})
    assert ok and "memory.yml succeeded" in detail and "uid-2.log" in detail


def test_a_crash_inside_the_runner_reaches_the_tick() -> None:
    from magicstick_host.sim.faults import SimulatedCrash

    class Crashing(SlowRunner):
        def run(self, argv: Sequence[str], **kw: object) -> CommandResult:  # type: ignore[override]
            raise SimulatedCrash("apt died")

    import tempfile

    with tempfile.TemporaryDirectory() as tmp, pytest.raises(SimulatedCrash):
        effect.run_playbook(ports(Path(tmp), Crashing(0, "", 0), []), "prepare.yml", "u", {})


def test_a_flooded_log_is_read_from_its_end_only(tmp_path: Path) -> None:
    """A run that wrote far more than the tail still names its failed task, and the reading
    takes no more than the tail (a 128 MiB log must not be read whole into a tick)."""
    log = tmp_path / "run.log"
    flood = ("x" * 99 + "\n") * 40_000  # 4 MB of noise before the failure
    log.write_text(flood + FAILED_LOG, encoding="utf-8")
    tail = effect.log_tail(log, limit=64 * 1024)
    assert len(tail.encode()) <= 64 * 1024
    assert not tail.startswith("x" * 100)  # cut at a line start
    assert effect.failed_task(tail) == "Install the approved kernel packages"
    assert effect.log_tail(log) == effect.log_tail(log, limit=effect.LOG_TAIL_BYTES)
    small = tmp_path / "small.log"
    small.write_text(FAILED_LOG, encoding="utf-8")
    assert effect.log_tail(small) == FAILED_LOG


def test_the_failed_task_s_own_message_is_kept_clipped_and_bounded() -> None:
    """The detail says why apt refused (its lock, a missing version), from the task's `msg`:
    its first line, at most MSG_CHARS; a line that is not ansible's JSON gives nothing."""
    assert effect.failed_message(FAILED_LOG) == "E: Version '7.0.0-31.31' for 'l..."
    long = "E: Could not get lock /var/lib/dpkg/lock-frontend. " + "x" * 500
    log = FAILED_LOG.replace("E: Version '7.0.0-31.31' for 'l...", long + "\\nsecond line")
    kept = effect.failed_message(log)
    assert kept.startswith("E: Could not get lock") and len(kept) == effect.MSG_CHARS
    assert "second line" not in kept
    for body in ("[" * 100_000, "not json", '{"msg": 7}', '["msg"]', '{"msg": "  "}'):
        deep = FAILED_LOG.replace(
            '{"changed": false, "msg": "E: Version \'7.0.0-31.31\' for \'l..."}', body)
        assert effect.failed_message(deep) == ""
        assert effect.failed_task(deep) == "Install the approved kernel packages"


def test_apt_s_error_comes_before_its_warnings() -> None:
    """Seen in the appliance VM: the refresh from an unsigned repository fails with three
    warnings of advice and then the reason, which the clipping cut off."""
    msg = ("Failed to update apt cache after 5 retries: W:Updating from such a repository can't "
           "be done securely, and is therefore disabled by default., W:See apt-secure(8) "
           "manpage for repository creation and user configuration details., W:Repositories "
           "should provide a clear-signed InRelease file, but none found at "
           "file:/srv/repo/./InRelease., E:The repository 'file:/srv/repo ./ Release' is not "
           "signed.")
    log = FAILED_LOG.replace("E: Version '7.0.0-31.31' for 'l...", msg.replace("'", "\\u0027"))
    kept = effect.failed_message(log)
    assert kept.startswith("Failed to update apt cache after 5 retries: E:The repository "
                           "'file:/srv/repo ./ Release' is not signed., W:Updating"), kept
    assert len(kept) == effect.MSG_CHARS
    # a message already in that order, or without apt's items, is kept as it is
    for same in ("Failed to update apt cache: E:one., W:two.", "no apt items: W is a letter"):
        assert effect.failed_message(FAILED_LOG.replace(
            "E: Version '7.0.0-31.31' for 'l...", same)) == same
