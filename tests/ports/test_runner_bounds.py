"""RealRunner's bounds on a command (issue #24, N4 and N5), on real processes, for each way a
command runs: captured (stdout and stderr on pipes), captured with descriptors handed down
(pass_fds), and logged to a file (stdout_path).

- output is capped per stream: past the cap the run is OUTPUT_TOO_LARGE with its first bytes,
  and the worker's memory stays bounded;
- the command leads its own process group, killed whole at the deadline;
- the exit is the command's own, even when a grandchild still holds its stdout, and that
  grandchild does not outlive the call.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from magicstick_host.ports.runner import (
    OUTPUT_CAP_BYTES,
    OUTPUT_TOO_LARGE,
    TIMED_OUT,
    CommandResult,
    RealRunner,
)

pytestmark = pytest.mark.real_commands

WAYS = ("captured", "fds-passed", "logged")
CAPTURED = ("captured", "fds-passed")


def run(way: str, argv: list[str], timeout: float, tmp_path: Path,
        runner: RealRunner | None = None) -> tuple[CommandResult, str]:
    """The result, and the command's stdout as that way keeps it."""
    runner = runner or RealRunner()
    if way == "captured":
        got = runner.run(argv, timeout=timeout)
        return got, got.stdout
    if way == "fds-passed":
        with open(os.devnull) as handed:
            got = runner.run(argv, timeout=timeout, pass_fds=(handed.fileno(),))
        return got, got.stdout
    log = tmp_path / "command.log"
    got = runner.run(argv, timeout=timeout, stdout_path=str(log))
    return got, log.read_text()


def running(pid: int) -> bool:
    """A live process (a zombie is dead: whoever inherited it may not reap it at once)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def gone(pid: int, within: float = 10) -> bool:
    """SIGKILL is sent, not waited for: give the kernel a generous moment."""
    deadline = time.monotonic() + within
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def pid_in(path: Path) -> int:
    return int(path.read_text().strip())


@pytest.fixture
def pidfiles(tmp_path: Path) -> Iterator[Path]:
    """A directory for the pid files a test's commands write; whatever is left of them is
    killed afterwards, so that a failing test does not leave `sleep 3600` behind."""
    directory = tmp_path / "pids"
    directory.mkdir()
    yield directory
    for path in directory.iterdir():
        try:
            pid = pid_in(path)
            if running(pid) and b"sleep" in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass


def peak_rss_reset() -> None:
    """Start VmHWM afresh (clear_refs "5"), where the kernel allows it."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def peak_rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/self/status")


@pytest.mark.parametrize("way", CAPTURED)
def test_a_flood_is_cut_at_the_cap_and_the_worker_s_memory_stays_bounded(
        way: str, tmp_path: Path) -> None:
    argv = ["yes"]
    peak_rss_reset()
    before = peak_rss_kib()
    start = time.monotonic()
    got, stdout = run(way, argv, 60, tmp_path)
    assert time.monotonic() - start < 30
    grown_mib = (peak_rss_kib() - before) / 1024
    assert got.returncode == OUTPUT_TOO_LARGE
    assert not got.ok
    assert stdout == "y\n" * (OUTPUT_CAP_BYTES // 2)  # the first bytes, exactly the cap
    assert got.stderr.splitlines()[-1].startswith(f"stdout passed {OUTPUT_CAP_BYTES} bytes")
    assert grown_mib < 160, f"the worker grew by {grown_mib:.0f} MiB"


@pytest.mark.parametrize("way", CAPTURED)
def test_output_past_the_cap_fails_even_when_the_tool_exits_0(way: str, tmp_path: Path) -> None:
    script = (f"import sys; sys.stdout.write('out'); sys.stdout.flush(); "
              f"sys.stderr.write('e' * {OUTPUT_CAP_BYTES + 4096})")
    got, stdout = run(way, [sys.executable, "-c", script], 60, tmp_path)
    assert got.returncode == OUTPUT_TOO_LARGE
    assert stdout == "out"
    first, note = got.stderr.rsplit("\n", 2)[:2]
    assert first == "e" * OUTPUT_CAP_BYTES
    assert note.startswith(f"stderr passed {OUTPUT_CAP_BYTES} bytes")


def test_a_log_that_grows_past_its_cap_ends_the_run(tmp_path: Path, pidfiles: Path) -> None:
    script = (f"import os, sys, time; open({str(pidfiles / 'writer')!r}, 'w').write("
              "str(os.getpid())); sys.stdout.write('x' * (4 << 20)); sys.stdout.flush(); "
              "time.sleep(3600)")
    got, log = run("logged", [sys.executable, "-c", script], 60, tmp_path,
                   RealRunner(log_cap=1 << 20))
    assert got.returncode == OUTPUT_TOO_LARGE
    assert got.stderr == f"its log grew past {1 << 20} bytes: the command was killed"
    assert log.startswith("x" * (1 << 20))
    assert gone(pid_in(pidfiles / "writer"))


@pytest.mark.parametrize("way", WAYS)
def test_the_command_leads_a_process_group_of_its_own(way: str, tmp_path: Path) -> None:
    script = "import os; print(os.getpgrp() == os.getpid(), os.getpgrp() == os.getppid())"
    got, stdout = run(way, [sys.executable, "-c", script], 60, tmp_path)
    assert (got.returncode, stdout) == (0, "True False\n")


@pytest.mark.parametrize("code", [0, 3])
@pytest.mark.parametrize("way", WAYS)
def test_the_exit_is_the_tool_s_own_when_a_grandchild_holds_its_stdout(
        way: str, code: int, tmp_path: Path, pidfiles: Path) -> None:
    argv = ["sh", "-c", f"sleep 3600 & echo $! > {pidfiles / 'sleep'}; echo hi; exit {code}"]
    start = time.monotonic()
    got, stdout = run(way, argv, 20, tmp_path)
    assert time.monotonic() - start < 10
    assert (got.returncode, stdout) == (code, "hi\n")
    assert gone(pid_in(pidfiles / "sleep"))


@pytest.mark.parametrize("way", WAYS)
def test_a_hanging_group_is_killed_whole_at_the_deadline(
        way: str, tmp_path: Path, pidfiles: Path) -> None:
    argv = ["sh", "-c", f"echo $$ > {pidfiles / 'sh'}; sleep 3600 & echo $! > "
                        f"{pidfiles / 'sleep'}; sleep 3600"]
    start = time.monotonic()
    got, _stdout = run(way, argv, 1, tmp_path)
    assert time.monotonic() - start < 10
    assert got == CommandResult(tuple(argv), TIMED_OUT, "", "timed out after 1 s")
    assert gone(pid_in(pidfiles / "sh"))
    assert gone(pid_in(pidfiles / "sleep"))


SELF_KILL = """
import os, resource, signal, subprocess, sys
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
left = subprocess.Popen(["sleep", "3600"])  # inherits stdout and holds it
open(sys.argv[1], "w").write(str(left.pid))
print("before", flush=True)
os.kill(os.getpid(), int(sys.argv[2]))
"""


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGTERM], ids=["SIGSEGV", "SIGTERM"])
@pytest.mark.parametrize("way", WAYS)
def test_a_tool_killed_by_a_signal_returns_its_negative_number(
        way: str, sig: signal.Signals, tmp_path: Path, pidfiles: Path) -> None:
    argv = [sys.executable, "-c", SELF_KILL, str(pidfiles / "sleep"), str(int(sig))]
    got, stdout = run(way, argv, 20, tmp_path)
    assert (got.returncode, stdout) == (-sig, "before\n")
    assert not got.ok
    assert gone(pid_in(pidfiles / "sleep"))


@pytest.mark.parametrize("way", CAPTURED)
def test_without_a_pidfd_the_exit_is_still_the_tool_s_own(
        way: str, tmp_path: Path, pidfiles: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "pidfd_open")
    argv = ["sh", "-c", f"sleep 3600 & echo $! > {pidfiles / 'sleep'}; echo hi; exit 5"]
    start = time.monotonic()
    got, stdout = run(way, argv, 20, tmp_path)
    assert time.monotonic() - start < 10
    assert (got.returncode, stdout) == (5, "hi\n")
    assert gone(pid_in(pidfiles / "sleep"))
