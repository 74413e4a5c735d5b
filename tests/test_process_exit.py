"""The command line's process exit skips the interpreter's teardown (issue 15) and loses
nothing: the exit code, buffered output, atexit handlers and a running non-daemon thread."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.real_commands

LEAVE = """
import atexit, sys, threading, time
from pathlib import Path
from magicstick_host.cli.main import _leave
out = Path(sys.argv[1])
atexit.register(lambda: (out / "atexit").write_text("ran"))
if sys.argv[2] == "thread":
    def late() -> None:
        time.sleep(0.3)
        (out / "thread").write_text("finished")
    threading.Thread(target=late).start()
sys.stdout.write("buffered, no newline")
sys.stderr.write("err line\\n")
_leave(7)
"""


# buffered, as under systemd (a developer's PYTHONUNBUFFERED would hide a lost buffer)
BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def leave(tmp_path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", LEAVE, str(tmp_path), mode],
                          capture_output=True, text=True, timeout=60, check=False, env=BUFFERED)


def test_the_exit_code_output_and_atexit_handlers_survive_the_short_exit(tmp_path: Path) -> None:
    done = leave(tmp_path, "plain")
    assert done.returncode == 7
    assert done.stdout == "buffered, no newline"
    assert done.stderr == "err line\n"
    assert (tmp_path / "atexit").read_text() == "ran"


def test_a_running_non_daemon_thread_is_waited_for(tmp_path: Path) -> None:
    done = leave(tmp_path, "thread")
    assert done.returncode == 7
    assert (tmp_path / "thread").read_text() == "finished"
    assert (tmp_path / "atexit").read_text() == "ran"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_output_that_cannot_be_flushed_does_not_change_the_exit_code(tmp_path: Path) -> None:
    with open("/dev/full", "w") as full:  # every write fails: ENOSPC
        done = subprocess.run([sys.executable, "-c", LEAVE, str(tmp_path), "plain"],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=60,
                              check=False, env=BUFFERED)
    assert done.returncode == 7  # a normal exit would say 120
    assert done.stderr == "err line\n"


COLLECTOR = """
import gc, sys
import magicstick_host.cli.main as cli
def command(args):
    import magicstick_host.cli.tick_run  # noqa: F401  (what the tick's command imports)
    def run():
        print(gc.isenabled(), gc.get_freeze_count() > 1000, flush=True)
        return 0
    return run
cli._command = command
sys.argv = ["magicstick-host", "tick"]
cli.entry_point()
"""


def test_the_collector_runs_during_the_command_with_its_modules_left_out() -> None:
    """The cyclic garbage collector is off only while the command's modules are imported: the
    command itself runs with it on (a long tick still collects), the imports frozen out."""
    done = subprocess.run([sys.executable, "-c", COLLECTOR], capture_output=True, text=True,
                          timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, "True True\n"), done.stderr
