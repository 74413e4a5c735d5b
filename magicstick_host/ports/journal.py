"""`journal.jsonl`: the append-only audit record, one compact JSON object per line.

Appends are fsynced; a torn tail from a power loss is terminated first, so it stays a separate
(skipped) line instead of swallowing the next entry. Readers skip torn, garbled and hostile
lines (duplicate keys, deep nesting: domain/strict_json.py). Entries that the state store
commits carry `seq` (schemas/journal.schema.json); `last_seq` finds the newest from the tail.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from magicstick_host.domain.strict_json import loads_strict
from magicstick_host.errors import UnsafePathError
from magicstick_host.ports.safe_files import open_checked, open_or_create, read_all, read_regular
from magicstick_host.ports.safe_files import write_all as _write_all

if TYPE_CHECKING:
    from typing import Any

TAIL_CHUNK = 256 * 1024
MAX_VIEW_BYTES = 64 * 1024 * 1024


def entry_seq(entry: dict[str, Any] | None) -> int:
    value = (entry or {}).get("seq")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def parse_line(raw: bytes) -> dict[str, Any] | None:
    """One journal line as an object; None for a torn, garbled or hostile line."""
    if not raw.strip(b"\0 \t\r"):
        return None
    try:
        doc = loads_strict(raw)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


class JournalFile:
    def __init__(self, path: Path, *, owner_uid: int) -> None:
        self.path = path
        self.owner_uid = owner_uid
        self._last_seq: int | None = None  # None: not read from the file yet

    def _open(self, flags: int) -> int:
        return open_checked(self.path, flags, role="journal", owner_uid=self.owner_uid)

    def forget(self) -> None:
        """The file was replaced (moved aside): read its tail again when asked."""
        self._last_seq = None

    def append(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, separators=(",", ":"), sort_keys=True, allow_nan=False)
        fd = open_or_create(
            self.path, os.O_RDWR | os.O_APPEND, role="journal", owner_uid=self.owner_uid
        )
        try:
            size = os.fstat(fd).st_size
            torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
            _write_all(fd, (b"\n" if torn else b"") + line.encode("utf-8") + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        if self._last_seq is not None:
            self._last_seq = max(self._last_seq, entry_seq(entry))

    def last_seq(self) -> int:
        """The newest `seq` in the file (0 without one), read once from its tail."""
        if self._last_seq is None:
            self._last_seq = self._read_last_seq()
        return self._last_seq

    def _read_last_seq(self) -> int:
        try:
            fd = self._open(os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return 0
        try:
            size = os.fstat(fd).st_size
            window = TAIL_CHUNK
            while True:
                start = max(0, size - window)
                lines = os.pread(fd, size - start, start).split(b"\n")
                if start > 0:
                    lines = lines[1:]  # the first piece may be the end of a longer line
                newest = max((entry_seq(parse_line(raw)) for raw in lines), default=0)
                if newest or start == 0:
                    return newest
                window *= 4
        finally:
            os.close(fd)

    def read(self) -> list[dict[str, Any]]:
        """Every intact entry, oldest first (the file checked as the tick checks it)."""
        try:
            fd = self._open(os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return []
        try:
            data = read_all(fd, None)
        finally:
            os.close(fd)
        return [doc for raw in data.split(b"\n") if (doc := parse_line(raw)) is not None]

    def peek(self, limit: int = MAX_VIEW_BYTES) -> tuple[list[dict[str, Any]], str, int]:
        """(entries, why the file cannot be read, lines skipped) for viewing: never raises,
        never blocks. A journal over `limit` bytes is read from its last `limit` bytes."""
        try:
            data = read_regular(self.path, None, tail=limit)
        except FileNotFoundError:
            return [], "", 0
        except UnsafePathError as exc:
            return [], str(exc), 0
        except OSError as exc:
            return [], f"{self.path}: {exc.strerror or exc}", 0
        entries: list[dict[str, Any]] = []
        skipped = 0
        for raw in data.split(b"\n"):
            doc = parse_line(raw)
            if doc is not None:
                entries.append(doc)
            elif raw.strip(b"\0 \t\r"):
                skipped += 1
        return entries, "", skipped
