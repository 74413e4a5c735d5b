"""The state store port: `state.json`, the append-only `journal.jsonl` and per-operation logs.

Crash safety (architecture.md): a save writes a 0600 temp file in the same directory, fsyncs it,
`os.replace`s it onto `state.json` and fsyncs the directory, so after a power loss the file is
either the old state or the new one. The directory must be 0700 and the files 0600 (at most),
owned by `owner_uid`, never symlinks; anything else is refused with `UnsafePathError`
(ports/state_paths.py says which, and how to fix it).

A corrupt `state.json` (not JSON, duplicate keys, nested too deep, not the schema) is never
guessed at and never silently reset: it is hard-linked aside to `state.json.corrupt-<UTC time>`,
then atomically replaced by a state carrying a "state-corrupt" Block, so at every crash point
either the corrupt file or the Block is in place (never nothing).

The original worker's `state.json` is not corrupt: the first load migrates it
(domain/legacy_state.py), keeps the original as `state.json.legacy-<UTC time>` and journals it.

The journal never misses a transition ("journal repair"). `commit` saves the state *with* its
journal entry (`lastJournal`, numbered by `seq`) and then appends the entry. If the append is
lost (a kill, a full disk), the next load appends it from the state before anything else can
happen. Write-ahead was the other choice; it was not taken because an entry written ahead of a
state replace that then never happens (a crash in between) would record a transition that did
not occur, and the next tick may take a different one: the journal would need a second
mechanism to tell committed entries from phantoms. Here `state.json` stays the one commit
point and the journal its faithful, complete, ordered copy. A journal that cannot be written is
refused at load, before any new transition (`StateError`, exit 4): a visible, recoverable block.

`load`, `save` and `commit` mutate the directory: call them while holding the MaintenanceLock.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import stat
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO, NoReturn, Protocol

from magicstick_host import schemas
from magicstick_host.domain.inspection import rfc3339
from magicstick_host.domain.legacy_state import (
    is_legacy_document,
    migrate_legacy_state,
    migration_summary,
)
from magicstick_host.domain.state import Block, State
from magicstick_host.domain.strict_json import loads_strict
from magicstick_host.errors import BadInputError, StateCorruptError, StateError, UnsafePathError
from magicstick_host.ports.clock import Clock, Instant, RealClock
from magicstick_host.ports.state_paths import (
    JOURNAL_FILE,
    LOGS_DIR,
    STATE_FILE,
    PathProblem,
    path_problem,
    writable_problem,
)

TEMP_PREFIX = ".state.json.tmp-"
MAX_STATE_BYTES = 16 * 1024 * 1024
MAX_JOURNAL_VIEW_BYTES = 64 * 1024 * 1024
_UID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")
_TAIL_CHUNK = 256 * 1024

# A crash-injection seam: called with a point name ("before-replace", "after-replace",
# "after-archive", "before-journal-append"); a test raises (or os._exit()s) there.
FaultHook = Callable[[str], None]


class StateStore(Protocol):
    # the state directory: also where per-operation vars files and logs live
    directory: Path

    def prepare(self) -> None: ...
    def load(self) -> State | None: ...
    def save(self, state: State) -> None: ...
    def commit(self, state: State, entry: dict[str, Any]) -> State: ...
    def read_journal(self) -> list[dict[str, Any]]: ...
    def op_log_path(self, request_uid: str) -> Path: ...


def parse_state(data: bytes, now: Instant) -> tuple[State, dict[str, Any] | None]:
    """The State that state.json bytes hold, and the legacy document when they are the
    original worker's (then the State is its migration). ValueError(reason): corrupt."""
    try:
        doc = loads_strict(data)
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if is_legacy_document(doc):
        problems = schemas.errors("legacy-state", doc)
        if problems:
            raise ValueError(f"legacy state (the original worker's): schema: {problems[0]}")
        return migrate_legacy_state(doc, wall=now.wall, boottime=now.boottime), doc
    problems = schemas.errors("state", doc)
    if problems:
        raise ValueError(f"schema: {problems[0]}")
    try:
        return State.from_json(doc), None
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"unreadable state: {exc!r}") from None


def _seq(entry: dict[str, Any] | None) -> int:
    value = (entry or {}).get("seq")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


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
        # the newest committed entry this process knows (from load or commit), and the newest
        # seq found in the journal file (None: not read yet)
        self._last: dict[str, Any] | None = None
        self._journal_seq: int | None = None

    @property
    def state_path(self) -> Path:
        return self.directory / STATE_FILE

    @property
    def journal_path(self) -> Path:
        return self.directory / JOURNAL_FILE

    # ---- directory and file safety -------------------------------------------------------

    def prepare(self) -> None:
        """Create the directory (0700) if missing; refuse an unsafe one."""
        self._ensure_dir(self.directory, parents=True, role="state directory")

    def _ensure_dir(self, path: Path, *, parents: bool, role: str) -> None:
        try:
            os.mkdir(path, 0o700)
            os.chmod(path, 0o700)  # the umask may have narrowed it; never widened
        except FileExistsError:
            pass
        except FileNotFoundError:
            if not parents:
                raise
            path.parent.mkdir(parents=True, exist_ok=True)
            self._ensure_dir(path, parents=False, role=role)
            return
        self._check(path, os.lstat(path), role=role)

    def _check(self, path: Path, st: os.stat_result, *, role: str) -> None:
        problem = path_problem(path, st, role=role, owner_uid=self.owner_uid)
        if problem is not None:
            fix = f"`{problem.fix}`" if problem.fix else "`magicstick-host recover` at the console"
            raise UnsafePathError(f"{problem.message}; fix: {fix}")

    def _refuse_unwritable(self, path: Path, role: str) -> None:
        problem = writable_problem(path, role=role)
        if problem is not None:
            raise StateError(f"{problem.message}; fix: `{problem.fix}`")

    def _open(self, path: Path, flags: int, *, role: str, create: bool = False) -> int:
        """Open a file with O_NOFOLLOW and check it; a new file gets 0600 and a directory fsync."""
        flags |= os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_CREAT | os.O_EXCL if create else 0)
        try:
            fd = os.open(path, flags, 0o600)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # O_NOFOLLOW: the final component is a symlink
                raise UnsafePathError(f"{path}: is a symlink; refusing to use it") from None
            if exc.errno in (errno.EISDIR, errno.ENXIO):  # a directory; a FIFO without reader
                raise UnsafePathError(f"{path}: is not a regular file") from None
            raise
        try:
            if create:
                os.fchmod(fd, 0o600)
            self._check(path, os.fstat(fd), role=role)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open_or_create(self, path: Path, flags: int, *, role: str) -> int:
        try:
            return self._open(path, flags, role=role)
        except FileNotFoundError:
            pass
        try:
            fd = self._open(path, flags, role=role, create=True)
        except FileExistsError:  # a concurrent creator won; use its file
            return self._open(path, flags, role=role)
        _fsync_dir(path.parent)
        return fd

    def check_usable(self) -> None:
        """Refuse, before any transition, what would make a save or a journal append fail:
        an unwritable directory, state file or journal, or an unsafe journal."""
        self._refuse_unwritable(self.directory, "state directory")
        for path, role in ((self.state_path, "state file"), (self.journal_path, "journal")):
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            if role == "journal":  # the state file's own checks come with reading it
                self._check(path, st, role=role)
            if stat.S_ISREG(st.st_mode):
                self._refuse_unwritable(path, role)

    # ---- state ---------------------------------------------------------------------------

    def load(self) -> State | None:
        """The saved state; None when there is none. Raises StateCorruptError (after moving the
        file aside and writing a Block), UnsafePathError or StateError (nothing touched).

        A legacy state is migrated (and saved); a journal entry whose append was lost is
        appended now."""
        self.prepare()
        self._sweep_temp_files()
        self.check_usable()
        try:
            fd = self._open(self.state_path, os.O_RDONLY | os.O_NONBLOCK, role="state file")
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
        now = self._clock.now()
        try:
            state, legacy = parse_state(data, now)
        except ValueError as exc:
            self._corrupt(str(exc))
        if legacy is not None:
            return self._migrate(state, legacy, now)
        self._last = state.last_journal
        self._repair_journal()
        return state

    def _migrate(self, state: State, legacy: dict[str, Any], now: Instant) -> State:
        """Keep the original's file beside ours, then commit the migration (journaled)."""
        archived = self._link_aside("legacy", now)
        _fsync_dir(self.directory)
        self._fault("after-archive")
        entry = {**migration_summary(legacy, state), "archived": str(archived)}
        return self.commit(state, {"at": rfc3339(now.wall), **entry})

    def _corrupt(self, reason: str) -> NoReturn:
        """Archive state.json, put a Block in its place, journal it, raise StateCorruptError."""
        reason = " ".join(reason.split())[:200]  # one line; a schema error can quote a lot
        now = self._clock.now()
        archived = self._link_aside("corrupt", now)
        _fsync_dir(self.directory)
        self._fault("after-archive")
        since = rfc3339(now.wall)
        message = f"state file was corrupt ({reason}); archived to {archived}"
        self._last = None  # what the corrupt file recorded is unknown
        self.commit(
            State(block=Block("state-corrupt", message, since, str(archived))),
            {"at": since, "event": "state-corrupt", "archived": str(archived), "reason": reason},
        )
        raise StateCorruptError(
            f"{self.state_path} is corrupt ({reason}); moved aside to {archived}; "
            "the worker stays stopped until `magicstick-host recover`"
        )

    def _aside_name(self, kind: str, now: Instant, base_name: str = STATE_FILE) -> list[Path]:
        base = f"{base_name}.{kind}-{now.wall.strftime('%Y%m%dT%H%M%SZ')}"
        return [self.directory / (base if n == 0 else f"{base}.{n}") for n in range(1000)]

    def _link_aside(self, kind: str, now: Instant) -> Path:
        for target in self._aside_name(kind, now):
            try:
                os.link(self.state_path, target, follow_symlinks=False)
            except FileExistsError:
                continue
            return target
        raise UnsafePathError(f"{self.directory}: too many archives named {STATE_FILE}.{kind}-*")

    def quarantine(self) -> list[str]:
        """For `recover`: move aside a state file or journal that no load can use (a symlink,
        a FIFO, a directory, ...). The state file's place is taken by a "state-corrupt" Block
        (the next load shows it, `recover` clears it). Returns what was moved, as text."""
        moved: list[str] = []
        now = self._clock.now()
        for path, role in ((self.journal_path, "journal"), (self.state_path, "state file")):
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            problem = path_problem(path, st, role=role, owner_uid=self.owner_uid)
            if problem is None or problem.fix:
                continue  # usable, or a chmod/chown clears it (status says which)
            target = self._move_aside(path, problem, now)
            moved.append(f"{path} ({problem.what}) -> {target}")
            if role == "state file":
                message = f"the state file {problem.what}; moved aside to {target}"
                self.commit(
                    State(block=Block("state-corrupt", message, rfc3339(now.wall), str(target))),
                    {"at": rfc3339(now.wall), "event": "state-quarantined",
                     "archived": str(target), "reason": problem.message},
                )
        return moved

    def _move_aside(self, path: Path, problem: PathProblem, now: Instant) -> Path:
        for target in self._aside_name("unsafe", now, path.name):
            if os.path.lexists(target):
                continue
            try:
                os.rename(path, target)  # renames the link, FIFO or directory itself
            except OSError as exc:
                raise StateError(
                    f"{path}: cannot be moved aside ({exc.strerror}); fix: chattr -i {path}"
                ) from None
            _fsync_dir(self.directory)
            return target
        raise UnsafePathError(f"{self.directory}: too many {path.name}.unsafe-* files")

    def save(self, state: State) -> None:
        """Validate, then write atomically. An invalid state is a bug: ValueError, no write.

        The newest committed journal entry this store knows always goes with it, so a save
        never forgets an entry whose append may still be missing."""
        if _seq(self._last) > _seq(state.last_journal):
            state = replace(state, last_journal=self._last)
        doc = state.to_json()
        problems = schemas.errors("state", doc)
        if problems:
            raise ValueError(f"refusing to save an invalid state: {'; '.join(problems[:3])}")
        data = (json.dumps(doc, indent=2, allow_nan=False) + "\n").encode("utf-8")
        self.prepare()
        temp = self.directory / f"{TEMP_PREFIX}{secrets.token_hex(8)}"
        fd = self._open(temp, os.O_WRONLY, role="state file", create=True)
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

    def commit(self, state: State, entry: dict[str, Any]) -> State:
        """Save `state` with its journal entry (numbered), then append the entry.

        A lost append is repaired by the next load (or commit). A failed append raises
        StateError: the state is saved, the tick stops, and the next load appends it."""
        self._repair_journal()
        seq = max(self._journal_last_seq(), _seq(self._last), _seq(state.last_journal)) + 1
        full = {**entry, "seq": seq}
        problems = schemas.errors("journal", full)
        if problems:
            raise ValueError(f"refusing to journal an invalid entry: {'; '.join(problems[:3])}")
        committed = replace(state, last_journal=full)
        self.save(committed)
        self._last = full
        self._append_committed(full)
        return committed

    def _append_committed(self, entry: dict[str, Any]) -> None:
        try:
            self._fault("before-journal-append")
            self.append_journal(entry)
        except OSError as exc:
            raise StateError(
                f"{self.journal_path}: appending entry {entry['seq']} failed "
                f"({exc.strerror or exc}); the transition is saved in {STATE_FILE} and is "
                "appended by the next tick"
            ) from None
        self._journal_seq = entry["seq"]

    def _repair_journal(self) -> None:
        """Append the newest committed entry if the journal does not have it yet."""
        if self._last is not None and _seq(self._last) > self._journal_last_seq():
            self._append_committed(self._last)

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
        fd = self._open_or_create(self.journal_path, os.O_RDWR | os.O_APPEND, role="journal")
        try:
            size = os.fstat(fd).st_size
            torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
            _write_all(fd, (b"\n" if torn else b"") + line.encode("utf-8") + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)

    def _journal_last_seq(self) -> int:
        """The newest `seq` in the journal file (0 without one), read once from its tail."""
        if self._journal_seq is None:
            self._journal_seq = self._read_last_seq()
        return self._journal_seq

    def _read_last_seq(self) -> int:
        try:
            fd = self._open(self.journal_path, os.O_RDONLY | os.O_NONBLOCK, role="journal")
        except FileNotFoundError:
            return 0
        try:
            size = os.fstat(fd).st_size
            window = _TAIL_CHUNK
            while True:
                start = max(0, size - window)
                lines = os.pread(fd, size - start, start).split(b"\n")
                if start > 0:
                    lines = lines[1:]  # the first piece may be the end of a longer line
                newest = max((_seq(_journal_line(raw)) for raw in lines), default=0)
                if newest or start == 0:
                    return newest
                window *= 4
        finally:
            os.close(fd)

    def read_journal(self) -> list[dict[str, Any]]:
        """Every intact entry, oldest first. Torn or garbled lines are skipped."""
        try:
            fd = self._open(self.journal_path, os.O_RDONLY | os.O_NONBLOCK, role="journal")
        except FileNotFoundError:
            return []
        try:
            data = _read_all(fd, None)
        finally:
            os.close(fd)
        return [doc for raw in data.split(b"\n") if (doc := _journal_line(raw)) is not None]

    # ---- read-only views (status, history): never create, move, repair or block --------

    def peek_state(self) -> tuple[State | None, str, bool]:
        """(state, why it cannot be read, whether it is the original worker's) for viewing.

        Never follows a symlink, never blocks on a FIFO (O_NONBLOCK, and only a regular file
        is read), never raises for what it finds; a legacy state is shown as its migration."""
        try:
            data = _read_regular(self.state_path, MAX_STATE_BYTES)
        except FileNotFoundError:
            return None, "", False
        except UnsafePathError as exc:
            return None, str(exc), False
        except OSError as exc:
            return None, f"{self.state_path}: {exc.strerror or exc}", False
        try:
            state, legacy = parse_state(data, self._clock.now())
        except ValueError as exc:
            return None, f"{self.state_path}: {' '.join(str(exc).split())[:300]}", False
        return state, "", legacy is not None

    def peek_journal(
        self, limit: int = MAX_JOURNAL_VIEW_BYTES
    ) -> tuple[list[dict[str, Any]], str, int]:
        """(entries oldest first, why the journal cannot be read, lines skipped) for viewing.
        A journal over `limit` bytes is read from its last `limit` bytes."""
        try:
            data = _read_regular(self.journal_path, None, tail=limit)
        except FileNotFoundError:
            return [], "", 0
        except UnsafePathError as exc:
            return [], str(exc), 0
        except OSError as exc:
            return [], f"{self.journal_path}: {exc.strerror or exc}", 0
        entries: list[dict[str, Any]] = []
        skipped = 0
        for raw in data.split(b"\n"):
            doc = _journal_line(raw)
            if doc is not None:
                entries.append(doc)
            elif raw.strip(b"\0 \t\r"):
                skipped += 1
        return entries, "", skipped

    def op_log_path(self, request_uid: str) -> Path:
        """`<dir>/logs/<uid>.log`; the logs directory is created 0700 on demand."""
        if not _UID_RE.match(request_uid):
            raise BadInputError(f"request uid {request_uid!r} is not a safe file name")
        self.prepare()
        logs = self.directory / LOGS_DIR
        self._ensure_dir(logs, parents=False, role="logs directory")
        return logs / f"{request_uid}.log"

    def open_op_log(self, request_uid: str) -> BinaryIO:
        """The operation log opened for appending (0600, O_NOFOLLOW, checked)."""
        path = self.op_log_path(request_uid)
        return os.fdopen(
            self._open_or_create(path, os.O_WRONLY | os.O_APPEND, role="log file"), "ab"
        )


def _journal_line(raw: bytes) -> dict[str, Any] | None:
    """One journal line as an object; None for a torn, garbled or hostile line."""
    if not raw.strip(b"\0 \t\r"):
        return None
    try:
        doc = loads_strict(raw)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _read_regular(path: Path, limit: int | None, *, tail: int | None = None) -> bytes:
    """A regular file's bytes (its last `tail` bytes when given). Refuses a symlink or any
    other file type before reading, without blocking."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePathError(f"{path}: is a symlink; refusing to read it") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePathError(f"{path}: is not a regular file; refusing to read it")
        if tail is not None:
            size = os.fstat(fd).st_size
            if size > tail:
                os.lseek(fd, size - tail, os.SEEK_SET)
        return _read_all(fd, limit)
    finally:
        os.close(fd)


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
