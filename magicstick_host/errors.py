"""The error taxonomy: a small set of stable codes, each carrying its exit code.

Only the CLI turns these into exit codes (cli/main.py): a raised error by its own exit code,
a tick that ran to its end by the most severe of the problems it met (`exit_code_of`).
Everything below the CLI raises one of these or lets a programming error propagate as a bug.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes. Documented in `magicstick-host --help` (EXIT_CODE_MEANINGS), the
    README and the service unit (which of them count as success for the timer)."""

    OK = 0
    # click's own code for a bad command line
    USAGE = 2
    # a file or option we were given (kubeconfig, profile, node name) is malformed
    BAD_INPUT = 3
    # local state is corrupt or unsafe: the worker stops until `recover`
    STATE_BLOCKED = 4
    # Kubernetes could not be reached or refused us; local state stays the truth
    KUBE_UNAVAILABLE = 5
    # a side effect failed; the outcome is recorded
    EFFECT_FAILED = 6
    # a programming error: a bug, never expected
    INTERNAL = 70
    # a local file could not be read or written (sysexits' EX_IOERR): full disk, read-only
    # filesystem, immutable file, a directory where a file should be
    LOCAL_IO = 74
    # another tick or host convergence holds the maintenance lock (EX_TEMPFAIL)
    BUSY = 75
    # the tick deliberately waits (cloud-init not finished)
    WAITING = 76


EXIT_CODE_MEANINGS = {
    ExitCode.OK: "done (an idle tick too)",
    ExitCode.USAGE: "a bad command line",
    ExitCode.BAD_INPUT: "a malformed kubeconfig, profile, node name or option",
    ExitCode.STATE_BLOCKED: "corrupt or unsafe state; the message says the fix (often `recover`)",
    ExitCode.KUBE_UNAVAILABLE: "Kubernetes unreachable or refusing; the local step still ran",
    ExitCode.EFFECT_FAILED: "a side effect failed; its outcome is recorded, nothing is retried",
    ExitCode.INTERNAL: "a bug",
    ExitCode.LOCAL_IO: "a local file cannot be written (disk full, read-only, immutable, ...)",
    ExitCode.BUSY: "another tick or host convergence holds the maintenance lock",
    ExitCode.WAITING: "cloud-init has not finished the base installation",
}


class MagicstickError(Exception):
    """Base of every expected failure. `code` is stable and machine-readable."""

    code = "error"
    exit_code = ExitCode.INTERNAL

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class BadInputError(MagicstickError):
    code = "bad-input"
    exit_code = ExitCode.BAD_INPUT


class ProfileError(BadInputError):
    """A shipped profile file is malformed. The message names the file and the field."""

    code = "profile-invalid"


class StateError(MagicstickError):
    code = "state-blocked"
    exit_code = ExitCode.STATE_BLOCKED


class StateCorruptError(StateError):
    code = "state-corrupt"


class LocalFileError(StateError):
    """The system refused a write the worker needs (full disk, read-only filesystem, immutable
    file, a directory where a file should be). The message names the path; nothing was lost:
    what was saved before stays, and the tick stops before the next transition."""

    code = "local-file-fault"
    exit_code = ExitCode.LOCAL_IO


class UnsafePathError(StateError):
    """A state file or directory is a symlink, has a foreign owner or a loose mode."""

    code = "unsafe-path"


class LockBusyError(MagicstickError):
    code = "busy"
    exit_code = ExitCode.BUSY


def local_file_error(exc: OSError, path: object, what: str) -> LocalFileError:
    """A LocalFileError for an OSError met on `path` (its own filename wins when it has one)."""
    where = exc.filename if exc.filename is not None else path
    return LocalFileError(f"{where}: {what} ({exc.strerror or exc})")


class WaitingError(MagicstickError):
    code = "waiting"
    exit_code = ExitCode.WAITING


class KubeError(MagicstickError):
    code = "kube-error"
    exit_code = ExitCode.KUBE_UNAVAILABLE


class KubeTemporaryError(KubeError):
    """Timeouts, connection errors, 429 and 5xx: retry on a later tick."""

    code = "kube-temporary"


class KubeUnreadableError(KubeTemporaryError):
    """An answer, or an object in a list, that the bounded decoder refuses (too deep, too large,
    not JSON: domain/strict_json.py). "Cannot tell", never "act": what depended on it waits,
    and the message names the object. `reason` is the decoder's one-line reason."""

    code = "kube-unreadable"

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


class KubePermanentError(KubeError):
    """400/401/403/422 and friends: retrying the same call will not help."""

    code = "kube-permanent"


class KubeConfigError(KubePermanentError):
    """The kubeconfig exists but cannot be used: bad input, not an outage."""

    code = "kubeconfig-invalid"
    exit_code = ExitCode.BAD_INPUT


class KubeNotFoundError(KubePermanentError):
    code = "kube-not-found"


class KubeConflictError(KubePermanentError):
    """409: a precondition (uid or resourceVersion) failed, or the object already exists."""

    code = "kube-conflict"


class EffectError(MagicstickError):
    code = "effect-failed"
    exit_code = ExitCode.EFFECT_FAILED


# most severe first: when a tick met several problems, the first of these it met decides
_SEVERITY = (
    ExitCode.INTERNAL,
    ExitCode.LOCAL_IO,
    ExitCode.STATE_BLOCKED,
    ExitCode.EFFECT_FAILED,
    ExitCode.BAD_INPUT,
    ExitCode.KUBE_UNAVAILABLE,
    ExitCode.WAITING,
    ExitCode.BUSY,
)


def exit_code_of(problems: Iterable[MagicstickError]) -> ExitCode:
    """The exit code of a run that met these problems (none: OK)."""
    codes = {p.exit_code for p in problems}
    return next((code for code in _SEVERITY if code in codes), ExitCode.OK)
