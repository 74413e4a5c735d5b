"""The command runner port: the one seam through which any external command runs.

Effects (shutdown, ansible-playbook) and the few read-only queries (systemctl is-active,
uname -m) go through it, so the host simulator can stand in for the real machine.

A real command's output and time are hostile until bounded (architecture.md). subprocess
starts it (Popen, stdin from /dev/null, a process group of its own); RealRunner holds every
run to these limits, kept here:
- the command leads a process group of its own, and that group is killed whole (SIGKILL)
  at the deadline: a grandchild does not outlive the call;
- the exit is the command's own: once the direct child has exited, the runner takes what its
  pipes already hold (a drain of at most DRAIN_S), kills what remains of its group, and
  returns the child's exit status, even when a grandchild still holds its stdout;
- captured output is capped at OUTPUT_CAP_BYTES per stream and a log file's growth at
  LOG_CAP_BYTES per run; past a cap the group is killed and the result is OUTPUT_TOO_LARGE,
  a failed command whose output (the first bytes) is not whole.
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from magicstick_host.lite_dataclasses import dataclass

# conventional shell codes, so a missing tool or a timeout reads like it would in a shell
NOT_FOUND = 127
TIMED_OUT = 124
# output past a cap: one past any exit status (0..255) and not negative like a signal, so no
# command can return it; stdout/stderr then hold only the first bytes, and stderr ends with a
# line saying which stream passed which cap
OUTPUT_TOO_LARGE = 256

OUTPUT_CAP_BYTES = 8 * 1024 * 1024  # per captured stream
LOG_CAP_BYTES = 128 * 1024 * 1024  # growth of a stdout_path log during one run
DRAIN_S = 0.25  # after the child's exit, for what its pipes still hold
LOG_POLL_S = 0.05  # how often a logged run's exit and log size are looked at
NAP_MAX_S = 0.05  # without a pidfd: the longest wait between two looks at the child's exit
READ_SIZE = 65536

EXITED = "exited"
DEADLINE = "deadline"


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class CommandRunner(Protocol):
    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        stdout_path: str | None = None,
    ) -> CommandResult:
        """Run argv without a shell. Never raises for a failing command: look at returncode
        (or `ok`): NOT_FOUND, TIMED_OUT, OUTPUT_TOO_LARGE, negative for a signal.

        With `stdout_path`, stdout and stderr go (appended) to that file instead of memory,
        for long steps whose output is a per-operation log.
        """
        ...


class FdPassingRunner(Protocol):
    """A runner that can hand descriptors down to the command (host convergence passes the
    maintenance lock to ansible-playbook, so the lock lives exactly as long as the run)."""

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        stdout_path: str | None = None,
        pass_fds: Sequence[int] = (),
    ) -> CommandResult: ...


class RealRunner:
    def __init__(self, *, output_cap: int = OUTPUT_CAP_BYTES,
                 log_cap: int = LOG_CAP_BYTES) -> None:
        self.output_cap = output_cap
        self.log_cap = log_cap

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        stdout_path: str | None = None,
        pass_fds: Sequence[int] = (),
    ) -> CommandResult:
        args = tuple(argv)
        deadline = time.monotonic() + timeout
        import subprocess  # with threading and selectors: in a process that runs a command

        environ = dict(env) if env is not None else None
        try:
            if stdout_path is not None:
                with open(stdout_path, "ab") as log:
                    start = os.fstat(log.fileno()).st_size
                    child = subprocess.Popen(
                        args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                        env=environ, pass_fds=tuple(pass_fds), process_group=0)
                    return self._logged(args, timeout, deadline, child.pid, child.wait,
                                        log.fileno(), start)
            proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=environ, pass_fds=tuple(pass_fds), process_group=0)
        except FileNotFoundError as exc:
            return CommandResult(args, NOT_FOUND, "", str(exc))
        assert proc.stdout is not None and proc.stderr is not None
        with proc.stdout, proc.stderr:
            return self._captured(args, timeout, deadline, proc.pid,
                                  (proc.stdout.fileno(), proc.stderr.fileno()), proc.wait)

    def _captured(self, args: tuple[str, ...], timeout: float, deadline: float, pid: int,
                  fds: tuple[int, int], reap: Callable[[], int]) -> CommandResult:
        """The run of a started child whose stdout and stderr are the pipes `fds`."""
        out, err = _Stream("stdout", fds[0]), _Stream("stderr", fds[1])
        try:
            outcome = _watch(pid, (out, err), deadline, self.output_cap)
        finally:
            returncode = _ended(pid, reap)
        if outcome == DEADLINE:
            return CommandResult(args, TIMED_OUT, "", f"timed out after {timeout:g} s")
        stdout, stderr = _text(out.data[:self.output_cap]), _text(err.data[:self.output_cap])
        if outcome == EXITED:
            return CommandResult(args, returncode, stdout, stderr)
        return CommandResult(args, OUTPUT_TOO_LARGE, stdout, _noted(
            stderr, f"{outcome} passed {self.output_cap} bytes: the command was killed and "
                    "its output is cut"))

    def _logged(self, args: tuple[str, ...], timeout: float, deadline: float, pid: int,
                reap: Callable[[], int], log_fd: int, start: int) -> CommandResult:
        """The run of a started child whose stdout and stderr append to the log `log_fd`."""
        try:
            outcome = _watch_log(pid, log_fd, start, deadline, self.log_cap)
        finally:
            returncode = _ended(pid, reap)
        if outcome == DEADLINE:
            return CommandResult(args, TIMED_OUT, "", f"timed out after {timeout:g} s")
        if outcome == EXITED:
            return CommandResult(args, returncode, "", "")
        return CommandResult(args, OUTPUT_TOO_LARGE, "", (
            f"its log grew past {self.log_cap} bytes: the command was killed"))


class _Stream:
    """One of the child's output pipes, and its first bytes (one past the cap at most)."""

    __slots__ = ("data", "fd", "name", "open")

    def __init__(self, name: str, fd: int) -> None:
        self.name = name
        self.fd = fd
        self.data = bytearray()
        self.open = True

    def read(self, cap: int) -> bool:
        """Read what is there; False at the end of the stream."""
        chunk = os.read(self.fd, READ_SIZE)
        if not chunk:
            self.open = False
            return False
        self.data += chunk[:cap + 1 - len(self.data)]
        return True


def _watch(pid: int, streams: tuple[_Stream, ...], deadline: float, cap: int) -> str:
    """EXITED (the child exited, its pipes drained), DEADLINE, or the name of the stream that
    passed the cap. The child is left unreaped, so that its group can still be killed."""
    pidfd = _pidfd(pid)
    try:
        by_fd = {stream.fd: stream for stream in streams}
        poller = select.poll()
        for fd in by_fd:
            poller.register(fd, select.POLLIN)
        if pidfd >= 0:
            poller.register(pidfd, select.POLLIN)
        nap = 0.001
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return DEADLINE
            if pidfd < 0:  # the exit is looked for between polls
                remaining, nap = min(remaining, nap), min(2 * nap, NAP_MAX_S)
            exited = False
            for fd, _event in poller.poll(max(1, int(remaining * 1000))):
                if fd == pidfd:
                    exited = True
                elif not by_fd[fd].read(cap):
                    poller.unregister(fd)
                elif len(by_fd[fd].data) > cap:
                    return by_fd[fd].name
            if exited or (pidfd < 0 and _has_exited(pid)):
                if pidfd >= 0:
                    poller.unregister(pidfd)
                return _drained(poller, by_fd, cap)
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def _drained(poller: select.poll, by_fd: dict[int, _Stream], cap: int) -> str:
    """What the pipes hold now that the child has exited, for at most DRAIN_S (a grandchild
    may hold them and write on): EXITED, or the name of the stream that passed the cap."""
    until = time.monotonic() + DRAIN_S
    while any(stream.open for stream in by_fd.values()) and time.monotonic() < until:
        events = poller.poll(0)
        if not events:
            break
        for fd, _event in events:
            if not by_fd[fd].read(cap):
                poller.unregister(fd)
            elif len(by_fd[fd].data) > cap:
                return by_fd[fd].name
    return EXITED


def _watch_log(pid: int, log_fd: int, start: int, deadline: float, cap: int) -> str:
    """EXITED, DEADLINE, or "log" when the log grew past the cap; the child left unreaped."""
    pidfd = _pidfd(pid)
    try:
        poller = select.poll()
        if pidfd >= 0:
            poller.register(pidfd, select.POLLIN)
        while True:
            if os.fstat(log_fd).st_size - start > cap:
                return "log"
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return DEADLINE
            wait_ms = max(1, int(min(remaining, LOG_POLL_S) * 1000))
            if poller.poll(wait_ms) or (pidfd < 0 and _has_exited(pid)):
                return EXITED
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def _pidfd(pid: int) -> int:
    """A pidfd for the child (readable once it has exited), or -1 where the kernel or Python
    has none: then the exit is looked for with waitid."""
    if not hasattr(os, "pidfd_open"):
        return -1
    try:
        return os.pidfd_open(pid)
    except OSError:
        return -1


def _has_exited(pid: int) -> bool:
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _ended(pid: int, reap: Callable[[], int]) -> int:
    """Kill what remains of the child's process group, then reap the child: its exit code,
    negative for a signal. The child is still unreaped here, so its pid (the group's id)
    cannot have been reused."""
    # ProcessLookupError: nothing left; PermissionError: a member an unprivileged run may not
    # signal (setuid)
    import signal  # loaded by subprocess already

    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    return reap()


def _noted(stderr: str, note: str) -> str:
    """The tool's stderr, then the runner's note as its last line."""
    if stderr and not stderr.endswith("\n"):
        stderr += "\n"
    return f"{stderr}{note}\n"


def _text(data: bytes | bytearray) -> str:
    """As subprocess's text mode decodes it: the units' locale is C.UTF-8 (LC_ALL), with
    universal newlines."""
    return bytes(data).decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
