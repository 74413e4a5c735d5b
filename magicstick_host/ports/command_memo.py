"""The memo of one command's output, keyed by everything the output is a function of.

`netplan get all` prints the merged netplan configuration: a function of the netplan files
(and of netplan's own version). It is a Python program that costs about 0.2 s of CPU, which
doubled an idle tick's cost when it ran on every tick, 5,760 times a day. The collector keys
its output by the exact contents of the files it reads, so an unchanged key means an unchanged
answer; the age limit bounds what a netplan upgrade (which changes no file it reads) could
leave behind. A memo that cannot be read, or does not match, is simply asked again: it is
never evidence of its own.

`netplan get` prints Wi-Fi keys, so the memo never goes to the state directory (which the
worker promises holds no credential): it lives in the service's runtime directory
(`RuntimeDirectory=`, a tmpfs emptied at every boot, named in $RUNTIME_DIRECTORY), one 0600 file
replaced atomically, like the root-only netplan files it was read from. Without that directory
(a tick at the console) there is no memo and netplan is asked every time.

`inspect` and `status` at the console read the timer's memos but never write them
(`console_memos`): the preflight changes nothing, and a memo whose key does not match what it
reads now is not used. They trust the directory only as the unit makes it: a directory (not a
symlink) owned by root or by the caller, writable by no one else, and each file owned by root
or the caller, readable and writable by no one else.

Trust (architecture.md, "Hostile until bounded"; issue 24 N3). The tick uses and writes a memo
only in a directory that is not a symlink, owned by its euid (root) and writable by no one
else, each memo a regular root-owned file no one else can read or write (0600), at most
MAX_MEMO_BYTES: all checked with fstat on the open descriptors (domain/memo_trust.py). A memo
anywhere else is ignored and its answer recomputed, and nothing is written there. The memo's
JSON, and the document it remembers, are decoded within MEMO_BOUNDS. The memos (all in
$RUNTIME_DIRECTORY): `kubeconfig.json` (the parsed kubeconfig, with its inline client key and
bearer token: sealed with the kubeconfig's own bytes, so that no one who cannot read the
kubeconfig can forge it), `profiles.json`, `dpkg-status.json` and `netplan-get.json` (the
netplan configuration, with Wi-Fi keys).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Collection
from typing import Protocol

from magicstick_host.domain.memo_trust import directory_trusted, file_trusted, seal, unseal
from magicstick_host.domain.strict_json import MAX_DEPTH, Bounds

MEMO_VERSION = 1
MAX_AGE_S = 3600.0
MAX_MEMO_BYTES = 4 * 1024 * 1024
# a memo file and the document it remembers: decoded within these (domain/strict_json.py)
MEMO_BOUNDS = Bounds(max_bytes=MAX_MEMO_BYTES, max_depth=MAX_DEPTH, max_items=1_000_000,
                     unique_keys=True)
# the unit's RuntimeDirectory=magicstick-host (units/magicstick-host-management.service)
UNIT_RUNTIME_DIR = "/run/magicstick-host"
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class CommandMemo(Protocol):
    def recall(self, key: str) -> str | None: ...

    def remember(self, key: str, output: str) -> None: ...


# the memo of a name ("netplan-get.json"), or None for none
MemoFactory = Callable[[str], "CommandMemo | None"]


def runtime_memo(name: str) -> FileCommandMemo | None:
    """The tick's memo `name` in $RUNTIME_DIRECTORY; each use checks the directory and file."""
    value = os.environ.get("RUNTIME_DIRECTORY", "").split(":")[0]
    return FileCommandMemo(os.path.join(value, name)) if value else None


def console_memos(root: str) -> MemoFactory:
    """The timer's memos, read-only: $RUNTIME_DIRECTORY when set, else the unit's directory
    when `root` is this machine's; none for a simulated root or an untrusted directory."""
    value = os.environ.get("RUNTIME_DIRECTORY", "").split(":")[0]
    directory = value or (UNIT_RUNTIME_DIR if os.path.realpath(root) == "/" else "")
    owners = frozenset({0, os.geteuid()})
    if not directory or not _trusted_directory(directory, owners):
        return lambda name: None
    return lambda name: ReadOnlyMemo(
        FileCommandMemo(os.path.join(directory, name), owners=owners))


def _trusted_directory(path: str, owners: Collection[int]) -> bool:
    try:
        info = os.lstat(os.path.normpath(path))
    except OSError:
        return False
    return directory_trusted(info.st_mode, info.st_uid, owners)


class ReadOnlyMemo:
    """A memo that is consulted and never written."""

    def __init__(self, memo: CommandMemo) -> None:
        self.memo = memo

    def recall(self, key: str) -> str | None:
        return self.memo.recall(key)

    def remember(self, key: str, output: str) -> None:
        return None


class FileCommandMemo:
    """One memo file. Used and written only in a directory (not a symlink) owned by one of
    `owners` (the worker's euid: root) that no one else can write, the file itself a regular
    file of theirs that no one else can read or write (domain/memo_trust.py), each checked
    with fstat on the descriptor that is then used (the file opened relative to the checked
    directory's descriptor, never through a symlink). Anything else is ignored, not written
    into, and the answer recomputed."""

    def __init__(self, path: str | os.PathLike[str], *, max_age_s: float = MAX_AGE_S,
                 owners: Collection[int] | None = None) -> None:
        # a string, not a pathlib.Path: pathlib (and urllib.parse, which it imports) is about
        # 6 ms of the console's inspect, which needs no path object
        self.path = os.fspath(path)
        self.max_age_s = max_age_s
        self.owners = frozenset({os.geteuid()} if owners is None else owners)

    def _directory(self) -> tuple[int, str] | None:
        """(a descriptor of the trusted directory, the file's name in it), or None."""
        directory, name = os.path.split(self.path)
        if not name:
            return None
        try:
            fd = os.open(os.path.normpath(directory or "."), _DIRECTORY)
        except OSError:  # missing, not a directory, a symlink (ELOOP)
            return None
        try:
            info = os.fstat(fd)
        except OSError:
            info = None
        if info is None or not directory_trusted(info.st_mode, info.st_uid, self.owners):
            os.close(fd)
            return None
        return fd, name

    def _read(self) -> bytes | None:
        opened = self._directory()
        if opened is None:
            return None
        dir_fd, name = opened
        try:
            fd = os.open(name, _READ, dir_fd=dir_fd)
        except OSError:  # missing, a symlink (ELOOP), unreadable
            return None
        finally:
            os.close(dir_fd)
        try:
            info = os.fstat(fd)
            if not file_trusted(info.st_mode, info.st_uid, info.st_size, self.owners,
                                MAX_MEMO_BYTES):
                return None
            chunks: list[bytes] = []
            total = 0
            while total <= MAX_MEMO_BYTES and (chunk := os.read(fd, MAX_MEMO_BYTES + 1 - total)):
                chunks.append(chunk)
                total += len(chunk)
        except OSError:
            return None
        finally:
            os.close(fd)
        return b"".join(chunks) if total <= MAX_MEMO_BYTES else None

    def recall(self, key: str) -> str | None:
        raw = self._read()
        if raw is None:
            return None
        try:
            doc = MEMO_BOUNDS.loads(raw)
        except ValueError:
            return None
        if not (isinstance(doc, dict) and doc.get("version") == MEMO_VERSION
                and doc.get("key") == key and isinstance(doc.get("output"), str)
                and type(doc.get("at")) in (int, float)):
            return None
        if not 0 <= time.time() - doc["at"] <= self.max_age_s:
            return None
        output: str = doc["output"]
        return output

    def remember(self, key: str, output: str) -> None:
        """Best effort: a memo that cannot be written only costs the next tick the command.
        Never into a directory it would not trust; the file is created 0600."""
        body = json.dumps({"version": MEMO_VERSION, "key": key, "at": time.time(),
                           "output": output}).encode("utf-8")
        if len(body) > MAX_MEMO_BYTES:
            return
        opened = self._directory()
        if opened is None:
            return
        dir_fd, name = opened
        temp = f".{name}.{os.getpid()}.tmp"
        try:
            with contextlib.suppress(FileNotFoundError):  # a killed tick of the same pid's
                os.unlink(temp, dir_fd=dir_fd)
            fd = os.open(temp, _CREATE, 0o600, dir_fd=dir_fd)
            try:
                os.fchmod(fd, 0o600)  # the umask may have narrowed it; never wider
                view = memoryview(body)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)


def json_exact(value: object, depth: int = 0) -> bool:
    """Whether JSON gives back exactly this value (no tuples, dates, bytes or non-string keys)."""
    if depth > 64:
        return False
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if isinstance(value, list):
        return all(json_exact(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and json_exact(v, depth + 1) for k, v in value.items())
    return False


def recall_document(memo: CommandMemo | None, key: str,
                    source: bytes | None = None) -> tuple[bool, object]:
    """(True, the parsed document remembered under `key`), or (False, None): the memo of a
    parse (YAML to data) instead of a command's text, so a hit needs no YAML parser at all.
    `source`, the bytes parsed, for a memo that holds a credential: it was sealed with them
    (domain/memo_trust.py), and one not sealed with them is not used."""
    text = memo.recall(key) if memo is not None and key else None
    if text is not None and source is not None:
        text = unseal(source, key, text)
    if text is None:
        return False, None
    try:
        return True, MEMO_BOUNDS.loads(text)
    except ValueError:
        return False, None


def remember_document(memo: CommandMemo | None, key: str, document: object,
                      source: bytes | None = None) -> None:
    if memo is not None and key and json_exact(document):
        text = json.dumps(document)
        memo.remember(key, text if source is None else seal(source, key, text))
