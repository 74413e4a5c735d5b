"""RealRunner's captured runs give what subprocess.run gives for the same command, on real
processes (the runner adds the deadline's group kill and the caps to subprocess.Popen). Its
bounds (output caps, process groups, the exit judged by the child): test_runner_bounds.py."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from magicstick_host.ports.runner import NOT_FOUND, TIMED_OUT, CommandResult, RealRunner

pytestmark = pytest.mark.real_commands



def reference(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> CommandResult:
    """What the runner returned when every captured run went through subprocess."""
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              errors="replace", timeout=timeout, env=env, check=False)
    except FileNotFoundError as exc:
        return CommandResult(tuple(argv), NOT_FOUND, "", str(exc))
    except subprocess.TimeoutExpired:
        return CommandResult(tuple(argv), TIMED_OUT, "", f"timed out after {timeout:g} s")
    return CommandResult(tuple(argv), proc.returncode, proc.stdout, proc.stderr)


SCRIPTS = {
    "both streams and an exit code": "echo out; echo err >&2; exit 3",
    "a megabyte on each stream, interleaved": (
        "i=0; while [ $i -lt 64 ]; do head -c 16384 /dev/zero | tr '\\0' a; "
        "head -c 16384 /dev/zero | tr '\\0' b >&2; i=$((i+1)); done"),
    "CRLF, a lone CR and bytes that are not UTF-8": "printf 'a\\r\\nb\\rc\\377d\\n'",
    "stdin is /dev/null": "cat; echo done",
    "killed by a signal": "echo before; kill -TERM $$",
    "SIGPIPE at its default in the tool": "yes | head -n 1",
    "no output at all": "true",
}


@pytest.mark.parametrize("script", SCRIPTS.values(), ids=SCRIPTS.keys())
def test_a_captured_run_is_what_subprocess_gives(script: str) -> None:
    argv = ["sh", "-c", script]
    assert RealRunner().run(argv, timeout=30) == reference(argv, 30)


def test_the_environment_given_is_the_environment_the_command_sees() -> None:
    env = {"PATH": os.environ["PATH"], "MAGICSTICK_PROBE": "über"}
    argv = ["sh", "-c", "env | sort"]
    got = RealRunner().run(argv, timeout=30, env=env)
    assert got == reference(argv, 30, env)
    assert "MAGICSTICK_PROBE=über" in got.stdout.splitlines()


def test_a_missing_program_is_127_worded_as_subprocess_words_it() -> None:
    argv = ["magicstick-no-such-tool", "--version"]
    got = RealRunner().run(argv, timeout=30)
    assert got == reference(argv, 30)
    assert got.returncode == NOT_FOUND


# a child left holding the streams after the shell exits is not a timeout: the exit is the
# shell's own (tests/ports/test_runner_bounds.py)
@pytest.mark.parametrize("script", [
    "sleep 30",
    "exec >&- 2>&-; sleep 30",          # closes its streams and keeps running
], ids=["sleeps", "closes its streams"])
def test_the_deadline_holds_and_the_command_is_gone_after_it(script: str, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    argv = ["sh", "-c", f"echo $$ > {pidfile}; {script}"]
    start = time.monotonic()
    got = RealRunner().run(argv, timeout=0.5)
    assert time.monotonic() - start < 10
    assert got == CommandResult(tuple(argv), TIMED_OUT, "", "timed out after 0.5 s")
    # killed and reaped: no process, not even a zombie
    assert not Path(f"/proc/{pidfile.read_text().strip()}").exists()


def test_without_a_pidfd_the_runner_still_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "pidfd_open")
    argv = ["sh", "-c", "echo out; exit 4"]
    assert RealRunner().run(argv, timeout=30) == reference(argv, 30)


def test_on_a_kernel_without_pidfds_the_deadline_still_holds(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def no_pidfd(pid: int, flags: int = 0) -> int:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    argv = ["sh", "-c", "echo out; exit 4"]
    assert RealRunner().run(argv, timeout=30) == reference(argv, 30)
    pidfile = tmp_path / "pid"
    argv = ["sh", "-c", f"echo $$ > {pidfile}; exec >&- 2>&-; sleep 30"]
    start = time.monotonic()
    assert RealRunner().run(argv, timeout=0.5).returncode == TIMED_OUT
    assert time.monotonic() - start < 10
    assert not Path(f"/proc/{pidfile.read_text().strip()}").exists()
