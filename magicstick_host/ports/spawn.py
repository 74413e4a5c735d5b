"""Run a command and capture its output without the subprocess module.

The real executor's idle tick runs `ip` twice, and importing subprocess (with threading,
selectors, signal and locale) costs about a twentieth of that tick. A captured run needs much
less: posix_spawn, two pipes, and a pidfd so that one poll waits for the output and the exit
together, within the deadline. This is what subprocess.run(capture_output=True, text=True,
errors="replace", stdin=DEVNULL, timeout=...) does, and the RealRunner tests hold the two to
the same results. Where this cannot work as written (no pidfd, or a standard descriptor the
worker was started without), `spawn_captured` returns None and the caller uses subprocess.
"""

from __future__ import annotations

import os
import select
import time
from collections.abc import Mapping

# Linux's numbers (the worker runs on Linux only; tests/ports/test_runner.py checks them
# against the signal module, which this module does not import)
SIGKILL = 9
SIGPIPE = 13
SIGXFSZ = 25
# the signals Python ignores for itself and subprocess puts back to their defaults in the
# child (restore_signals): a tool must not inherit "SIGPIPE ignored"
RESTORED = (SIGPIPE, SIGXFSZ)
READ_SIZE = 65536


class SpawnTimeout(Exception):
    """The command outlived its deadline; it has been killed and reaped."""


def spawn_captured(argv: tuple[str, ...], timeout: float,
                   env: Mapping[str, str] | None) -> tuple[int, str, str] | None:
    """(exit code, stdout, stderr) of argv run without a shell, stdin from /dev/null; the exit
    code is negative for a signal, as subprocess reports it. Raises FileNotFoundError when the
    program is not found and SpawnTimeout after `timeout` seconds. None: not possible here."""
    if not hasattr(os, "pidfd_open"):
        return None
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    if min(out_r, out_w, err_r, err_w) <= 2:
        # a standard descriptor was closed when the worker started: dup2 onto itself would
        # leave it close-on-exec in the child
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        return None
    try:
        pid = os.posix_spawnp(
            argv[0], argv, os.environ if env is None else dict(env),
            file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                          (os.POSIX_SPAWN_DUP2, out_w, 1),
                          (os.POSIX_SPAWN_DUP2, err_w, 2)],
            setsigdef=RESTORED,
        )
    except BaseException:
        for fd in (out_r, err_r):
            os.close(fd)
        raise
    finally:
        os.close(out_w)
        os.close(err_w)
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        pidfd = -1  # a kernel before 5.3: the exit is polled for after the streams end
    deadline = time.monotonic() + timeout
    try:
        output = _collect(pidfd, out_r, err_r, deadline)
    finally:
        for fd in (out_r, err_r, pidfd):
            if fd >= 0:
                os.close(fd)
    status = None if output is None else _reaped(pid, deadline)
    if output is None or status is None:
        os.kill(pid, SIGKILL)
        os.waitpid(pid, 0)
        raise SpawnTimeout
    return os.waitstatus_to_exitcode(status), _text(output[0]), _text(output[1])


def _reaped(pid: int, deadline: float) -> int | None:
    """The wait status of a child that has exited or is about to (its streams have ended), or
    None at the deadline."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.005)


def _collect(pidfd: int, out_r: int, err_r: int,
             deadline: float) -> tuple[bytes, bytes] | None:
    """Both streams to their end and (with a pidfd) the child's exit, or None at the
    deadline."""
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    poller = select.poll()
    waiting = {out_r, err_r}
    for fd in waiting:
        poller.register(fd, select.POLLIN)
    if pidfd >= 0:
        poller.register(pidfd, select.POLLIN)
        waiting.add(pidfd)
    while waiting:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        for fd, _event in poller.poll(max(1, int(remaining * 1000))):
            data = b"" if fd == pidfd else os.read(fd, READ_SIZE)
            if data:
                chunks[fd].append(data)
            else:  # end of a stream, or the child has exited
                poller.unregister(fd)
                waiting.discard(fd)
    return b"".join(chunks[out_r]), b"".join(chunks[err_r])


def _text(data: bytes) -> str:
    """As subprocess's text mode decodes it: the units' locale is C.UTF-8 (LC_ALL), with
    universal newlines."""
    return data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
