"""The network trial's files in the state directory: `<state>/network/` (0700, root-owned).

- `id.key`: the 32 random bytes that key the published `network.id` (created once, 0600);
- `trial.json`: the trial record (schemas/network-trial.schema.json), written atomically;
- `settings.json`: the approved settings *with* the password, 0600, only while a trial needs
  them (removed when it ends): the one place a credential lives outside /etc/netplan;
- `scan.json`: the last Wi-Fi scan as the report publishes it (`network.scan`);
- `secret-sweep.json`: when the stale request Secrets were last looked for (boot ID and
  CLOCK_BOOTTIME seconds); losing it only brings the next look forward;
- `backup/`: the copies of /etc/netplan/*.yaml taken before the trial changed anything
  (written as `backup.partial-*` and renamed when complete, so a half backup is never used);
- `trial.lock`: flock(2) lock serialising the tick's trial steps, the deadline rollback and
  the boot recovery (they run in different processes; the rollback must not wait for the
  maintenance lock a slow tick may hold, only for a trial step, which is bounded).

Every file and directory is checked like the state store's (ports/state_paths.py roles
"network directory" and "network file"): no symlinks, root-owned, 0700/0600.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from magicstick_host import schemas
from magicstick_host.domain.network.trial import TrialRecord
from magicstick_host.domain.strict_json import loads_strict
from magicstick_host.errors import LockBusyError, StateError
from magicstick_host.ports.host_files import HostFile
from magicstick_host.ports.safe_files import (
    check,
    ensure_dir,
    fsync_dir,
    open_checked,
    read_all,
    write_all,
)

if TYPE_CHECKING:
    from typing import Any

NETWORK_DIR = "network"
KEY_FILE = "id.key"
TRIAL_FILE = "trial.json"
SETTINGS_FILE = "settings.json"
SCAN_FILE = "scan.json"
SWEEP_FILE = "secret-sweep.json"
BACKUP_DIR = "backup"
LOCK_FILE = "trial.lock"
KEY_BYTES = 32
MAX_RECORD_BYTES = 1024 * 1024
MAX_BACKUP_FILE_BYTES = 256 * 1024
DIR_ROLE, FILE_ROLE = "network directory", "network file"


class NetworkStoreError(StateError):
    """A network trial file is unsafe, unreadable or invalid (the message says which)."""

    code = "network-store"


class NetworkStore:
    def __init__(self, state_dir: Path, *, owner_uid: int | None = None) -> None:
        self.state_dir = Path(state_dir)
        self.directory = self.state_dir / NETWORK_DIR
        self.owner_uid = os.geteuid() if owner_uid is None else owner_uid

    # -- layout ----------------------------------------------------------------------------

    def prepare(self) -> None:
        ensure_dir(self.state_dir, parents=True, role="state directory", owner_uid=self.owner_uid)
        ensure_dir(self.directory, parents=False, role=DIR_ROLE, owner_uid=self.owner_uid)

    def _path(self, name: str) -> Path:
        return self.directory / name

    def _open(self, name: str, flags: int, *, create: bool = False) -> int:
        try:
            return open_checked(self._path(name), flags, role=FILE_ROLE,
                                owner_uid=self.owner_uid, create=create)
        except StateError as exc:
            raise NetworkStoreError(str(exc)) from None

    def _read(self, name: str, limit: int) -> bytes | None:
        try:
            fd = self._open(name, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        try:
            return read_all(fd, limit)
        except OSError as exc:
            raise NetworkStoreError(f"{self._path(name)}: {exc}") from None
        finally:
            os.close(fd)

    def _write(self, name: str, data: bytes) -> None:
        self.prepare()
        temp = f".{name}.tmp-{os.urandom(6).hex()}"
        fd = self._open(temp, os.O_WRONLY, create=True)
        try:
            try:
                write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(self._path(temp), self._path(name))
        except BaseException:
            self._path(temp).unlink(missing_ok=True)
            raise
        fsync_dir(self.directory)

    def _remove(self, name: str) -> None:
        try:
            self._path(name).unlink()
        except FileNotFoundError:
            return
        fsync_dir(self.directory)

    # -- the id key ------------------------------------------------------------------------

    def id_key(self) -> bytes:
        """The key, created once (O_EXCL: two creators never both win)."""
        existing = self.read_id_key()
        if existing is not None:
            return existing
        self.prepare()
        import secrets

        key = secrets.token_bytes(KEY_BYTES)
        try:
            fd = self._open(KEY_FILE, os.O_WRONLY, create=True)
        except FileExistsError:
            found = self.read_id_key()
            assert found is not None
            return found
        try:
            write_all(fd, key)
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_dir(self.directory)
        return key

    def read_id_key(self) -> bytes | None:
        """The key, or None when there is none yet. Never creates anything."""
        if not self.directory.exists():
            return None
        data = self._read(KEY_FILE, KEY_BYTES + 1)
        if data is None:
            return None
        if len(data) != KEY_BYTES:
            raise NetworkStoreError(f"{self._path(KEY_FILE)}: not {KEY_BYTES} bytes; "
                                    f"fix: `rm {self._path(KEY_FILE)}` (a new id is made)")
        return data

    # -- the trial record ------------------------------------------------------------------

    def load_trial(self) -> TrialRecord | None:
        if not self.directory.exists():
            return None
        data = self._read(TRIAL_FILE, MAX_RECORD_BYTES)
        if data is None:
            return None
        try:
            doc = loads_strict(data)
        except ValueError as exc:
            raise NetworkStoreError(f"{self._path(TRIAL_FILE)}: not JSON: {exc}") from None
        problems = schemas.errors("network-trial", doc)
        if problems:
            raise NetworkStoreError(f"{self._path(TRIAL_FILE)}: schema: {problems[0]}")
        return TrialRecord.from_json(doc)

    def save_trial(self, trial: TrialRecord) -> None:
        doc = trial.to_json()
        problems = schemas.errors("network-trial", doc)
        if problems:
            raise ValueError(f"refusing to save an invalid trial record: {problems[0]}")
        self._write(TRIAL_FILE, (json.dumps(doc, indent=1) + "\n").encode("utf-8"))

    def remove_trial(self) -> None:
        self._remove(TRIAL_FILE)

    # -- the approved settings (with the password) ----------------------------------------

    def write_settings(self, settings: dict[str, Any]) -> None:
        self._write(SETTINGS_FILE, json.dumps(settings, sort_keys=True).encode("utf-8"))

    def read_settings(self) -> dict[str, Any] | None:
        data = self._read(SETTINGS_FILE, 64 * 1024) if self.directory.exists() else None
        if data is None:
            return None
        try:
            doc = loads_strict(data)
        except ValueError:
            raise NetworkStoreError(f"{self._path(SETTINGS_FILE)}: not JSON") from None
        if not isinstance(doc, dict):
            raise NetworkStoreError(f"{self._path(SETTINGS_FILE)}: not an object")
        return doc

    def settings_present(self) -> bool:
        """Whether the approved settings are kept (without reading them)."""
        return self._path(SETTINGS_FILE).is_file()

    def remove_settings(self) -> None:
        self._remove(SETTINGS_FILE)

    # -- the last Wi-Fi scan ---------------------------------------------------------------

    def save_scan(self, scan: dict[str, Any]) -> None:
        problems = schemas.errors("network", {"supported": False, "message": "",
                                              "interfaces": [], "id": "0" * 64, "scan": scan})
        if problems:
            raise ValueError(f"refusing to save an invalid scan: {problems[0]}")
        self._write(SCAN_FILE, json.dumps(scan, sort_keys=True).encode("utf-8"))

    def load_scan(self) -> dict[str, Any] | None:
        """The last scan, or None (none yet, or unreadable: a scan is never worth a block)."""
        try:
            data = self._read(SCAN_FILE, 256 * 1024) if self.directory.exists() else None
            doc = loads_strict(data) if data is not None else None
        except (NetworkStoreError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None

    # -- when the stale request Secrets were last looked for --------------------------------

    def load_sweep(self) -> dict[str, Any] | None:
        """The last look's record, or None (none yet, or unreadable: the look is just due)."""
        try:
            data = self._read(SWEEP_FILE, 4096) if self.directory.exists() else None
            doc = loads_strict(data) if data is not None else None
        except (NetworkStoreError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None

    def save_sweep(self, boot_id: str, boottime: float) -> None:
        self._write(SWEEP_FILE, json.dumps({"bootId": boot_id, "boottime": boottime}).encode())

    # -- the backup ------------------------------------------------------------------------

    @property
    def backup_path(self) -> Path:
        return self._path(BACKUP_DIR)

    def save_backup(self, files: list[HostFile]) -> None:
        """Write the copies into a new directory, fsync everything, then rename it into place:
        `backup/` exists only complete. A leftover `backup/` (of an ended trial) is replaced."""
        self.prepare()
        self.sweep_partial_backups()
        partial = self._path(f"{BACKUP_DIR}.partial-{os.urandom(6).hex()}")
        os.mkdir(partial, 0o700)
        try:
            for file in files:
                fd = open_checked(partial / file.name, os.O_WRONLY, role=FILE_ROLE,
                                  owner_uid=self.owner_uid, create=True)
                try:
                    write_all(fd, file.data)
                    os.fsync(fd)
                finally:
                    os.close(fd)
            fsync_dir(partial)
            self.drop_backup()
            os.rename(partial, self.backup_path)
        except BaseException:
            _rmtree(partial, ignore_errors=True)
            raise
        fsync_dir(self.directory)

    def load_backup(self, names: list[str]) -> dict[str, bytes]:
        """The backed-up bytes by name. NetworkStoreError when one is missing or unsafe."""
        found: dict[str, bytes] = {}
        try:
            check(self.backup_path, os.lstat(self.backup_path), role=DIR_ROLE,
                  owner_uid=self.owner_uid)
        except FileNotFoundError:
            raise NetworkStoreError(f"{self.backup_path}: the backup is missing") from None
        except StateError as exc:
            raise NetworkStoreError(str(exc)) from None
        for name in names:
            try:
                fd = open_checked(self.backup_path / name, os.O_RDONLY | os.O_NONBLOCK,
                                  role=FILE_ROLE, owner_uid=self.owner_uid)
            except FileNotFoundError:
                raise NetworkStoreError(f"{self.backup_path / name}: missing from the "
                                        "backup") from None
            except StateError as exc:
                raise NetworkStoreError(str(exc)) from None
            try:
                found[name] = read_all(fd, MAX_BACKUP_FILE_BYTES)
            finally:
                os.close(fd)
        return found

    def drop_backup(self) -> None:
        if self.backup_path.is_symlink():
            self.backup_path.unlink()
        elif self.backup_path.exists():
            _rmtree(self.backup_path)
            fsync_dir(self.directory)

    def sweep_partial_backups(self) -> None:
        if not self.directory.exists():
            return
        for entry in os.scandir(self.directory):
            if entry.name.startswith(f"{BACKUP_DIR}.partial-") and not entry.is_symlink():
                _rmtree(entry.path, ignore_errors=True)

    # -- the trial lock --------------------------------------------------------------------

    @contextmanager
    def lock(self, *, wait_s: float) -> Iterator[None]:
        """Hold the trial lock, waiting at most `wait_s` for it (LockBusyError then)."""
        self.prepare()
        path = self._path(LOCK_FILE)
        try:
            fd = self._open(LOCK_FILE, os.O_RDWR)
        except FileNotFoundError:
            try:
                fd = self._open(LOCK_FILE, os.O_RDWR, create=True)
            except FileExistsError:
                fd = self._open(LOCK_FILE, os.O_RDWR)
        try:
            deadline = time.monotonic() + wait_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                if time.monotonic() >= deadline:
                    raise LockBusyError(f"{path}: a network trial step is still running")
                time.sleep(0.1)
            yield
        finally:
            os.close(fd)


def sha256_bytes(data: bytes) -> str:
    return _sha256_hex(data)


def _rmtree(path: Path | str, ignore_errors: bool = False) -> None:
    import shutil  # on use: it imports the compression modules, which a tick never needs

    shutil.rmtree(path, ignore_errors=ignore_errors)


def _sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
