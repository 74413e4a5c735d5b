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

import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from magicstick_host import schemas
from magicstick_host.domain.legacy_state import migration_summary
from magicstick_host.domain.state import Block, State
from magicstick_host.domain.times import rfc3339
from magicstick_host.errors import (
    BadInputError,
    LocalFileError,
    StateCorruptError,
    StateError,
    UnsafePathError,
)
from magicstick_host.lite_dataclasses import replace
from magicstick_host.ports.clock import Clock, Instant, RealClock
from magicstick_host.ports.journal import JournalFile, entry_seq
from magicstick_host.ports.safe_files import (
    check,
    ensure_dir,
    fsync_dir,
    local_faults,
    open_checked,
    open_or_create,
    read_all,
    read_regular,
    refuse_unwritable,
    write_all,
)
from magicstick_host.ports.state_document import document_errors, parse_state
from magicstick_host.ports.state_paths import (
    JOURNAL_FILE,
    LOGS_DIR,
    STATE_FILE,
    PathProblem,
    path_problem,
)

if TYPE_CHECKING:
    from typing import Any, BinaryIO, NoReturn

TEMP_PREFIX = ".state.json.tmp-"
MAX_STATE_BYTES = 16 * 1024 * 1024
_UID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")

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
        self.journal = JournalFile(directory / JOURNAL_FILE, owner_uid=self.owner_uid)
        # the newest committed entry this process knows (from load or commit)
        self._last: dict[str, Any] | None = None

    @property
    def state_path(self) -> Path:
        return self.directory / STATE_FILE

    @property
    def journal_path(self) -> Path:
        return self.directory / JOURNAL_FILE

    # ---- directory and file safety -------------------------------------------------------

    @local_faults
    def prepare(self) -> None:
        """Create the directory (0700) if missing; refuse an unsafe one."""
        ensure_dir(self.directory, parents=True, role="state directory", owner_uid=self.owner_uid)

    def _check(self, path: Path, st: os.stat_result, *, role: str) -> None:
        check(path, st, role=role, owner_uid=self.owner_uid)

    def _open(self, path: Path, flags: int, *, role: str, create: bool = False) -> int:
        return open_checked(path, flags, role=role, owner_uid=self.owner_uid, create=create)

    def check_usable(self) -> None:
        """Refuse, before any transition, what would make a save or a journal append fail:
        an unwritable directory, state file or journal, or an unsafe journal."""
        refuse_unwritable(self.directory, role="state directory")
        for path, role in ((self.state_path, "state file"), (self.journal_path, "journal")):
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            if role == "journal":  # the state file's own checks come with reading it
                self._check(path, st, role=role)
            if stat.S_ISREG(st.st_mode):
                refuse_unwritable(path, role=role)

    # ---- state ---------------------------------------------------------------------------

    @local_faults
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
            data = read_all(fd, MAX_STATE_BYTES)
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
        fsync_dir(self.directory)
        self._fault("after-archive")
        entry = {**migration_summary(legacy, state), "archived": str(archived)}
        return self.commit(state, {"at": rfc3339(now.wall), **entry})

    def _corrupt(self, reason: str) -> NoReturn:
        """Archive state.json, put a Block in its place, journal it, raise StateCorruptError."""
        reason = " ".join(reason.split())[:200]  # one line; a schema error can quote a lot
        now = self._clock.now()
        archived = self._link_aside("corrupt", now)
        fsync_dir(self.directory)
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

    @local_faults
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
            if role == "journal":
                self.journal.forget()
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
            fsync_dir(self.directory)
            return target
        raise UnsafePathError(f"{self.directory}: too many {path.name}.unsafe-* files")

    @local_faults
    def save(self, state: State) -> None:
        """Validate, then write atomically. An invalid state is a bug: ValueError, no write.

        The newest committed journal entry this store knows always goes with it, so a save
        never forgets an entry whose append may still be missing."""
        if entry_seq(self._last) > entry_seq(state.last_journal):
            state = replace(state, last_journal=self._last)
        doc = state.to_json()
        problems = document_errors(doc)
        if problems:
            raise ValueError(f"refusing to save an invalid state: {'; '.join(problems[:3])}")
        data = (json.dumps(doc, indent=2, allow_nan=False) + "\n").encode("utf-8")
        self.prepare()
        temp = self.directory / f"{TEMP_PREFIX}{os.urandom(8).hex()}"
        fd = self._open(temp, os.O_WRONLY, role="state file", create=True)
        try:
            try:
                write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            self._fault("before-replace")
            os.replace(temp, self.state_path)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        self._fault("after-replace")
        fsync_dir(self.directory)

    @local_faults
    def commit(self, state: State, entry: dict[str, Any]) -> State:
        """Save `state` with its journal entry (numbered), then append the entry.

        A lost append is repaired by the next load (or commit). A failed append raises
        StateError: the state is saved, the tick stops, and the next load appends it."""
        self._repair_journal()
        seq = max(self.journal.last_seq(), entry_seq(self._last), entry_seq(state.last_journal))
        seq += 1
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
            raise LocalFileError(
                f"{self.journal_path}: appending entry {entry['seq']} failed "
                f"({exc.strerror or exc}); the transition is saved in {STATE_FILE} and is "
                "appended by the next tick"
            ) from None

    def _repair_journal(self) -> None:
        """Append the newest committed entry if the journal does not have it yet."""
        if self._last is not None and entry_seq(self._last) > self.journal.last_seq():
            self._append_committed(self._last)

    def _sweep_temp_files(self) -> None:
        """Remove temp files a power loss left behind (under the lock, no save is in flight)."""
        for entry in os.scandir(self.directory):
            if entry.name.startswith(TEMP_PREFIX) and entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)

    # ---- journal and logs ----------------------------------------------------------------

    def append_journal(self, entry: dict[str, Any]) -> None:
        """Append one line as it is (no `seq`): `commit` is how transitions are journaled."""
        self.prepare()
        self.journal.append(entry)

    def read_journal(self) -> list[dict[str, Any]]:
        """Every intact entry, oldest first. Torn or garbled lines are skipped."""
        return self.journal.read()

    # ---- read-only views (status, history): never create, move, repair or block --------

    def peek_state(self) -> tuple[State | None, str, bool]:
        """(state, why it cannot be read, whether it is the original worker's) for viewing.

        Never follows a symlink, never blocks on a FIFO (O_NONBLOCK, and only a regular file
        is read), never raises for what it finds; a legacy state is shown as its migration."""
        try:
            data = read_regular(self.state_path, MAX_STATE_BYTES)
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

    def peek_journal(self) -> tuple[list[dict[str, Any]], str, int]:
        """(entries oldest first, why the journal cannot be read, lines skipped) for viewing."""
        return self.journal.peek()

    @local_faults
    def op_log_path(self, request_uid: str) -> Path:
        """`<dir>/logs/<uid>.log`; the logs directory is created 0700 on demand."""
        if not _UID_RE.match(request_uid):
            raise BadInputError(f"request uid {request_uid!r} is not a safe file name")
        self.prepare()
        logs = self.directory / LOGS_DIR
        ensure_dir(logs, parents=False, role="logs directory", owner_uid=self.owner_uid)
        return logs / f"{request_uid}.log"

    def open_op_log(self, request_uid: str) -> BinaryIO:
        """The operation log opened for appending (0600, O_NOFOLLOW, checked)."""
        path = self.op_log_path(request_uid)
        flags = os.O_WRONLY | os.O_APPEND
        fd = open_or_create(path, flags, role="log file", owner_uid=self.owner_uid)
        return os.fdopen(fd, "ab")
