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
symlink) owned by root or by the caller, writable by no one else.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Callable

from magicstick_host.static import Protocol

MEMO_VERSION = 1
MAX_AGE_S = 3600.0
MAX_MEMO_BYTES = 4 * 1024 * 1024
# the unit's RuntimeDirectory=magicstick-host (units/magicstick-host-management.service)
UNIT_RUNTIME_DIR = "/run/magicstick-host"


class CommandMemo(Protocol):
    def recall(self, key: str) -> str | None: ...

    def remember(self, key: str, output: str) -> None: ...


# the memo of a name ("netplan-get.json"), or None for none
MemoFactory = Callable[[str], "CommandMemo | None"]


def runtime_memo(name: str) -> FileCommandMemo | None:
    value = os.environ.get("RUNTIME_DIRECTORY", "").split(":")[0]
    return FileCommandMemo(os.path.join(value, name)) if value else None


def console_memos(root: str) -> MemoFactory:
    """The timer's memos, read-only: $RUNTIME_DIRECTORY when set, else the unit's directory
    when `root` is this machine's; none for a simulated root or an untrusted directory."""
    value = os.environ.get("RUNTIME_DIRECTORY", "").split(":")[0]
    directory = value or (UNIT_RUNTIME_DIR if os.path.realpath(root) == "/" else "")
    if not directory or not _trusted_directory(directory):
        return lambda name: None
    return lambda name: ReadOnlyMemo(FileCommandMemo(os.path.join(directory, name)))


def _trusted_directory(path: str) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid in (0, os.geteuid())
            and not info.st_mode & 0o022)


class ReadOnlyMemo:
    """A memo that is consulted and never written."""

    def __init__(self, memo: CommandMemo) -> None:
        self.memo = memo

    def recall(self, key: str) -> str | None:
        return self.memo.recall(key)

    def remember(self, key: str, output: str) -> None:
        return None


class FileCommandMemo:
    def __init__(self, path: str | os.PathLike[str], *, max_age_s: float = MAX_AGE_S) -> None:
        # a string, not a pathlib.Path: pathlib (and urllib.parse, which it imports) is about
        # 6 ms of the console's inspect, which needs no path object
        self.path = os.fspath(path)
        self.max_age_s = max_age_s

    def recall(self, key: str) -> str | None:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            raw = os.read(fd, MAX_MEMO_BYTES + 1)
        except OSError:
            return None
        finally:
            os.close(fd)
        try:
            doc = json.loads(raw)
        except ValueError:
            return None
        if not (isinstance(doc, dict) and doc.get("version") == MEMO_VERSION
                and doc.get("key") == key and isinstance(doc.get("output"), str)
                and isinstance(doc.get("at"), (int, float))):
            return None
        if not 0 <= time.time() - doc["at"] <= self.max_age_s:
            return None
        output: str = doc["output"]
        return output

    def remember(self, key: str, output: str) -> None:
        """Best effort: a memo that cannot be written only costs the next tick the command."""
        body = json.dumps({"version": MEMO_VERSION, "key": key, "at": time.time(),
                           "output": output}).encode("utf-8")
        if len(body) > MAX_MEMO_BYTES:
            return
        directory, name = os.path.split(self.path)
        temp = os.path.join(directory, f".{name}.tmp")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, body)
            finally:
                os.close(fd)
            os.replace(temp, self.path)
        except OSError:
            return


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


def recall_document(memo: CommandMemo | None, key: str) -> tuple[bool, object]:
    """(True, the parsed document remembered under `key`), or (False, None): the memo of a
    parse (YAML to data) instead of a command's text, so a hit needs no YAML parser at all."""
    text = memo.recall(key) if memo is not None and key else None
    if text is None:
        return False, None
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def remember_document(memo: CommandMemo | None, key: str, document: object) -> None:
    if memo is not None and key and json_exact(document):
        memo.remember(key, json.dumps(document))
