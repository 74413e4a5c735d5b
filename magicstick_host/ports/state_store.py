"""The state store port: `state.json`, the append-only `journal.jsonl` and per-operation logs.

Crash safety (architecture.md): a save writes a 0600 temp file in the same directory, fsyncs it,
`os.replace`s it onto `state.json` and fsyncs the directory, so after a power loss the file is
either the old state or the new one. The directory must be 0700 and the files 0600 (at most),
owned by `owner_uid`, never symlinks; anything else is refused with `UnsafePathError`.

A corrupt `state.json` is never guessed at and never silently reset: it is hard-linked aside to
`state.json.corrupt-<UTC time>`, then atomically replaced by a state carrying a "state-corrupt"
Block, so at every crash point either the corrupt file or the Block is in place (never nothing).

`load` and `save` mutate the directory: call them while holding the MaintenanceLock.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, NoReturn, Protocol

from magicstick_host import schemas
from magicstick_host.domain.state import Block, State
from magicstick_host.errors import BadInputError, StateCorruptError, UnsafePathError
from magicstick_host.ports.clock import Clock, RealClock

STATE_FILE = "state.json"
JOURNAL_FILE = "journal.jsonl"
LOGS_DIR = "logs"
TEMP_PREFIX = ".state.json.tmp-"
MAX_STATE_BYTES = 16 * 1024 * 1024
_UID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")

# A crash-injection seam: called with a point name ("before-replace", "after-replace",
# "after-archive"); a test raises (or os._exit()s) there to simulate a crash.
FaultHook = Callable[[str], None]


class StateStore(Protocol):
    # the state directory: also where per-operation vars files and logs live
    directory: Path

    def prepare(self) -> None: ...
    def load(self) -> State | None: ...
    def save(self, state: State) -> None: ...
    def append_journal(self, entry: dict[str, Any]) -> None: ...
    def read_journal(self) -> list[dict[str, Any]]: ...
    def op_log_path(self, request_uid: str) -> Path: ...


class FileStateStore:
    def __init__(
        self,
        directory: Path,
        *,
        owner_uid: int | None = None,
        clock: Clock | None = None,
        fault: FaultHook | None = None,
    ) -> None:
        self.directory = directory
        self.owner_uid = os.geteuid() if owner_uid is None else owner_uid
        self._clock = clock or RealClock()
        self._fault = fault or (lambda point: None)

    @property
    def state_path(self) -> Path:
        return self.directory / STATE_FILE

    @property
    def journal_path(self) -> Path:
        return self.directory / JOURNAL_FILE

    # ---- directory and file safety -------------------------------------------------------

    def prepare(self) -> None:
        """Create the directory (0700) if missing; refuse an unsafe one."""
        self._ensure_dir(self.directory, parents=True)

    def _ensure_dir(self, path: Path, *, parents: bool) -> None:
        try:
            os.mkdir(path, 0o700)
            os.chmod(path, 0o700)  # the umask may have narrowed it; never widened
        except FileExistsError:
            pass
        except FileNotFoundError:
            if not parents:
                raise
            path.parent.mkdir(parents=True, exist_ok=True)
            self._ensure_dir(path, parents=False)
            return
        self._check(path, os.lstat(path), want_dir=True)

    def _check(self, path: Path, st: os.stat_result, *, want_dir: bool) -> None:
        if stat.S_ISLNK(st.st_mode):
            raise UnsafePathError(f"{path}: is a symlink; refusing to use it")
        if want_dir and not stat.S_ISDIR(st.st_mode):
            raise UnsafePathError(f"{path}: is not a directory")
        if not want_dir and not stat.S_ISREG(st.st_mode):
            raise UnsafePathError(f"{path}: is not a regular file")
        if st.st_uid != self.owner_uid:
            raise UnsafePathError(f"{path}: owned by uid {st.st_uid}, expected {self.owner_uid}")
        limit = 0o700 if want_dir else 0o600
        if stat.S_IMODE(st.st_mode) & ~limit:
            raise UnsafePathError(
                f"{path}: mode {stat.S_IMODE(st.st_mode):04o} is too open (want {limit:04o})"
            )

    def _open(self, path: Path, flags: int, *, create: bool = False) -> int:
        """Open a file with O_NOFOLLOW and check it; a new file gets 0600 and a directory fsync."""
        flags |= os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_CREAT | os.O_EXCL if create else 0)
        try:
            fd = os.open(path, flags, 0o600)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # O_NOFOLLOW: the final component is a symlink
                raise UnsafePathError(f"{path}: is a symlink; refusing to use it") from None
            raise
        try:
            if create:
                os.fchmod(fd, 0o600)
            self._check(path, os.fstat(fd), want_dir=False)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open_or_create(self, path: Path, flags: int) -> int:
        try:
            return self._open(path, flags)
        except FileNotFoundError:
            pass
        try:
            fd = self._open(path, flags, create=True)
        except FileExistsError:  # a concurrent creator won; use its file
            return self._open(path, flags)
        _fsync_dir(path.parent)
        return fd

    # ---- state ---------------------------------------------------------------------------

    def load(self) -> State | None:
        """The saved state; None when there is none. Raises StateCorruptError (after moving the
        file aside and writing a Block) or UnsafePathError (nothing touched)."""
        self.prepare()
        self._sweep_temp_files()
        try:
            fd = self._open(self.state_path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._corrupt(f"unreadable: {exc.strerror}")
        try:
            data = _read_all(fd, MAX_STATE_BYTES)
        except OSError as exc:
            self._corrupt(f"unreadable: {exc.strerror or exc}")
        finally:
            os.close(fd)
        return self._parse(data)

    def _parse(self, data: bytes) -> State:
        try:
            doc = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
        except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            self._corrupt(f"not JSON: {exc}")
        problems = schemas.errors("state", doc)
        if problems:
            self._corrupt(f"schema: {problems[0]}")
        try:
            return State.from_json(doc)
        except (KeyError, TypeError, ValueError) as exc:
            self._corrupt(f"unreadable state: {exc!r}")

    def _corrupt(self, reason: str) -> NoReturn:
        """Archive state.json, put a Block in its place, journal it, raise StateCorruptError."""
        reason = " ".join(reason.split())[:200]  # one line; a schema error can quote a lot
        now = self._clock.now().wall
        archived = self._link_aside(now.strftime("%Y%m%dT%H%M%SZ"))
        _fsync_dir(self.directory)
        self._fault("after-archive")
        since = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        message = f"state file was corrupt ({reason}); archived to {archived}"
        self.save(State(block=Block("state-corrupt", message, since, str(archived))))
        self.append_journal(
            {"time": since, "event": "state-corrupt", "archived": str(archived), "reason": reason}
        )
        raise StateCorruptError(
            f"{self.state_path} is corrupt ({reason}); moved aside to {archived}; "
            "the worker stays stopped until `magicstick-host recover`"
        )

    def _link_aside(self, stamp: str) -> Path:
        base = f"{STATE_FILE}.corrupt-{stamp}"
        for n in range(1000):
            target = self.directory / (base if n == 0 else f"{base}.{n}")
            try:
                os.link(self.state_path, target, follow_symlinks=False)
            except FileExistsError:
                continue
            return target
        raise UnsafePathError(f"{self.directory}: too many archives named {base}*")

    def save(self, state: State) -> None:
        """Validate, then write atomically. An invalid state is a bug: ValueError, no write."""
        doc = state.to_json()
        problems = schemas.errors("state", doc)
        if problems:
            raise ValueError(f"refusing to save an invalid state: {'; '.join(problems[:3])}")
        data = (json.dumps(doc, indent=2, allow_nan=False) + "\n").encode("utf-8")
        self.prepare()
        temp = self.directory / f"{TEMP_PREFIX}{secrets.token_hex(8)}"
        fd = self._open(temp, os.O_WRONLY, create=True)
        try:
            try:
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            self._fault("before-replace")
            os.replace(temp, self.state_path)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        self._fault("after-replace")
        _fsync_dir(self.directory)

    def _sweep_temp_files(self) -> None:
        """Remove temp files a power loss left behind (under the lock, no save is in flight)."""
        for entry in os.scandir(self.directory):
            if entry.name.startswith(TEMP_PREFIX) and entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)

    # ---- journal and logs ----------------------------------------------------------------

    def append_journal(self, entry: dict[str, Any]) -> None:
        """Append one compact JSON line and fsync. A torn tail from a power loss is terminated
        first, so it stays a separate (skipped) line instead of swallowing this entry."""
        line = json.dumps(entry, separators=(",", ":"), sort_keys=True, allow_nan=False)
        self.prepare()
        fd = self._open_or_create(self.journal_path, os.O_RDWR | os.O_APPEND)
        try:
            size = os.fstat(fd).st_size
            torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
            _write_all(fd, (b"\n" if torn else b"") + line.encode("utf-8") + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)

    def read_journal(self) -> list[dict[str, Any]]:
        """Every intact entry, oldest first. Torn or garbled lines are skipped."""
        try:
            fd = self._open(self.journal_path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return []
        try:
            data = _read_all(fd, None)
        finally:
            os.close(fd)
        entries: list[dict[str, Any]] = []
        for raw in data.split(b"\n"):
            try:
                doc = json.loads(raw.decode("utf-8"))
            except ValueError:
                continue
            if isinstance(doc, dict):
                entries.append(doc)
        return entries

    def op_log_path(self, request_uid: str) -> Path:
        """`<dir>/logs/<uid>.log`; the logs directory is created 0700 on demand."""
        if not _UID_RE.match(request_uid):
            raise BadInputError(f"request uid {request_uid!r} is not a safe file name")
        self.prepare()
        logs = self.directory / LOGS_DIR
        self._ensure_dir(logs, parents=False)
        return logs / f"{request_uid}.log"

    def open_op_log(self, request_uid: str) -> BinaryIO:
        """The operation log opened for appending (0600, O_NOFOLLOW, checked)."""
        path = self.op_log_path(request_uid)
        return os.fdopen(self._open_or_create(path, os.O_WRONLY | os.O_APPEND), "ab")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _read_all(fd: int, limit: int | None) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
        total += len(chunk)
        if limit is not None and total > limit:
            raise OSError(f"larger than {limit} bytes")
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
