"""Start a command with its output on two pipes, without the subprocess module.

The real executor's idle tick runs `ip` twice, and importing subprocess (with threading,
selectors, signal and locale) costs about a twentieth of that tick. Starting a captured run
needs much less: posix_spawn and two pipes. Watching it (the deadline, the output cap, the
exit judged by the child, the group kill) is the runner's, for both ways of starting
(ports/runner.py), and the RealRunner tests hold this start to what subprocess gives. Where
this cannot work as written (a standard descriptor the worker was started without),
`spawn_piped` returns None and the caller uses subprocess.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# Linux's numbers (the worker runs on Linux only; tests/ports/test_runner.py checks them
# against the signal module, which this module does not import)
SIGPIPE = 13
SIGXFSZ = 25
# the signals Python ignores for itself and subprocess puts back to their defaults in the
# child (restore_signals): a tool must not inherit "SIGPIPE ignored"
RESTORED = (SIGPIPE, SIGXFSZ)


def spawn_piped(argv: tuple[str, ...],
                env: Mapping[str, str] | None) -> tuple[int, int, int] | None:
    """(pid, stdout's read end, stderr's read end) of argv started without a shell, stdin from
    /dev/null, as the leader of a process group of its own (so that the runner can kill it
    whole). Raises FileNotFoundError when the program is not found. None: not possible here."""
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
            setpgroup=0,
            setsigdef=RESTORED,
        )
    except BaseException:
        for fd in (out_r, err_r):
            os.close(fd)
        raise
    finally:
        os.close(out_w)
        os.close(err_w)
    return pid, out_r, err_r
