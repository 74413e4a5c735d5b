"""Which state-directory paths the worker refuses, and the command that makes each usable.

The tick refuses a state directory, state file, journal, lock file or logs directory that is a
symlink, has the wrong type, a foreign owner or a loose mode (architecture.md, crash safety),
and one it cannot write (read-only filesystem, immutable attribute). The state store raises on
the first one; `status` lists all of them, read-only, each with a fix that works: a shell
command, or "" when `magicstick-host recover` clears it (it moves the path aside).

Nothing here opens a file: `lstat` and `access` only, so a FIFO can never block a reader.
"""

from __future__ import annotations

import errno
import os
import pwd
import stat
from pathlib import Path

from magicstick_host.lite_dataclasses import dataclass

STATE_FILE = "state.json"
JOURNAL_FILE = "journal.jsonl"
LOCK_FILE = "maintenance.lock"
LOGS_DIR = "logs"

# role -> (is a directory, the widest mode allowed)
ROLES = {
    "state directory": (True, 0o700),
    "state file": (False, 0o600),
    "journal": (False, 0o600),
    "lock file": (False, 0o600),
    "logs directory": (True, 0o700),
    "log file": (False, 0o600),
    # the network trial's record, backup, settings, lock and id key (ports/network_store.py)
    "network directory": (True, 0o700),
    "network file": (False, 0o600),
}


@dataclass(frozen=True)
class PathProblem:
    path: Path
    role: str  # a key of ROLES
    kind: str  # "symlink" | "not-directory" | "not-regular" | "owner" | "mode" | "unwritable"
    message: str  # one line: what is wrong
    fix: str  # a shell command that clears it; "" when `magicstick-host recover` does

    @property
    def what(self) -> str:
        """The message without the path: "is a symlink; refusing to use it"."""
        return self.message.removeprefix(f"{self.path}: ")


def owner_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _type_fix(path: Path, role: str, kind: str) -> str:
    if role in ("state file", "journal"):
        return ""  # recover moves it aside (the state file is archived, then blocked)
    if role == "state directory" and kind == "symlink":
        # keep the state: the link's target becomes the directory itself
        target = os.path.realpath(path)
        return f"rm {path} && mv -T {target} {path}"
    if role == "logs directory" and kind == "symlink":
        return f"rm {path}"  # recreated on demand; the link's target is left alone
    return f"mv -T {path} {path}.unsafe"


def path_problem(
    path: Path, st: os.stat_result, *, role: str, owner_uid: int
) -> PathProblem | None:
    """The first thing wrong with `path` (as `lstat` or `fstat` saw it) for its role."""
    want_dir, widest = ROLES[role]
    kind, message = "", ""
    if stat.S_ISLNK(st.st_mode):
        kind, message = "symlink", f"{path}: is a symlink; refusing to use it"
    elif want_dir and not stat.S_ISDIR(st.st_mode):
        kind, message = "not-directory", f"{path}: is not a directory"
    elif not want_dir and not stat.S_ISREG(st.st_mode):
        kind, message = "not-regular", f"{path}: is not a regular file"
    if kind:
        return PathProblem(path, role, kind, message, _type_fix(path, role, kind))
    if st.st_uid != owner_uid:
        owner = "root:root" if owner_uid == 0 else owner_name(owner_uid)
        return PathProblem(
            path,
            role,
            "owner",
            f"{path}: owned by uid {st.st_uid}, expected {owner_uid}",
            f"chown {owner} {path}",
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & ~widest and role != "lock file":  # the lock tightens its own mode
        return PathProblem(
            path,
            role,
            "mode",
            f"{path}: mode {mode:04o} is too open (want {widest:04o})",
            f"chmod {widest:04o} {path}",
        )
    return None


def writable_problem(path: Path, *, role: str) -> PathProblem | None:
    """A path the worker must write (or replace) but cannot: read-only or immutable."""
    if os.access(path, os.W_OK, follow_symlinks=False):
        return None
    try:
        read_only = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only:
        return PathProblem(
            path,
            role,
            "unwritable",
            f"{path}: is on a read-only filesystem",
            f"mount -o remount,rw \"$(stat -c %m {path})\"",
        )
    return PathProblem(
        path,
        role,
        "unwritable",
        f"{path}: cannot be written (immutable or append-only attribute, or no write "
        "permission)",
        f"chattr -i -a {path} && chmod u+w {path}",
    )


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            return None
        raise


def probe_state_dir(directory: Path, *, owner_uid: int) -> list[PathProblem]:
    """Every condition under `directory` that blocks the tick. Read-only; never opens a file."""
    problems: list[PathProblem] = []
    try:
        st = _lstat(directory)
    except OSError as exc:
        return [PathProblem(directory, "state directory", "unwritable",
                            f"{directory}: cannot be read ({exc.strerror})", "")]
    if st is None:
        return []  # the tick creates it (0700)
    found = path_problem(directory, st, role="state directory", owner_uid=owner_uid)
    if found is not None:
        return [found]  # nothing beneath it is used until it is fixed
    writable = writable_problem(directory, role="state directory")
    if writable is not None:
        problems.append(writable)
    for name, role in (
        (STATE_FILE, "state file"),
        (JOURNAL_FILE, "journal"),
        (LOCK_FILE, "lock file"),
        (LOGS_DIR, "logs directory"),
    ):
        path = directory / name
        try:
            st = _lstat(path)
        except OSError as exc:
            problems.append(PathProblem(path, role, "unwritable",
                                        f"{path}: cannot be read ({exc.strerror})", ""))
            continue
        if st is None:
            continue
        found = path_problem(path, st, role=role, owner_uid=owner_uid)
        if found is None and role in ("state file", "journal") and writable is None:
            found = writable_problem(path, role=role)
        if found is not None:
            problems.append(found)
    return problems
