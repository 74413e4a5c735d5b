"""The collector's one way to read the host: every failure becomes an `Unknown`, never an
exception. Collector modules ask "what is this value, or None?" and move on."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from magicstick_host.domain.evidence import Unknown
from magicstick_host.domain.parsers import ParseError
from magicstick_host.ports.hostfs import DEFAULT_MAX_BYTES, HostFS, HostReadError

if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")


class Reader:
    def __init__(self, fs: HostFS) -> None:
        self.fs = fs
        self.unknowns: list[Unknown] = []

    def unknown(self, field: str, path: str, reason: str) -> None:
        self.unknowns.append(Unknown(field=field, reason=f"{path}: {reason}"))

    def text(
        self,
        path: str,
        field: str,
        *,
        optional: bool = False,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> str | None:
        """The file's text, or None. A missing optional file is not an unknown: its absence
        is the fact (no uma/ directory, no pending shutdown)."""
        try:
            return self.fs.read_text(path, max_bytes=max_bytes)
        except HostReadError as exc:
            if not (optional and exc.missing):
                self.unknown(field, path, exc.reason)
            return None

    def parsed(
        self,
        path: str,
        field: str,
        parser: Callable[[str], T],
        *,
        optional: bool = False,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> T | None:
        text = self.text(path, field, optional=optional, max_bytes=max_bytes)
        if text is None:
            return None
        return self.parse(text, path, field, parser)

    def parse(self, text: str, path: str, field: str, parser: Callable[[str], T]) -> T | None:
        try:
            return parser(text)
        except ParseError as exc:
            self.unknown(field, path, str(exc))
            return None

    def exists(self, path: str, field: str, *, otherwise: bool) -> bool:
        """Whether the path exists; `otherwise` (the conservative answer) when we cannot tell."""
        try:
            return self.fs.exists(path)
        except HostReadError as exc:
            self.unknown(field, path, exc.reason)
            return otherwise

    def is_dir(self, path: str, field: str) -> bool | None:
        try:
            return self.fs.is_dir(path)
        except HostReadError as exc:
            self.unknown(field, path, exc.reason)
            return None

    def path_kind(self, path: str, field: str) -> str | None:
        """"socket", "missing" or "other" (a file, a directory...); None when unreadable."""
        try:
            if self.fs.is_socket(path):
                return "socket"
            return "other" if self.fs.exists(path) else "missing"
        except HostReadError as exc:
            self.unknown(field, path, exc.reason)
            return None

    def list_dir(self, path: str, field: str, *, optional: bool = False) -> list[str] | None:
        """Entry names; [] for a missing optional directory, None when unreadable."""
        try:
            return self.fs.list_dir(path)
        except HostReadError as exc:
            if optional and exc.missing:
                return []
            self.unknown(field, path, exc.reason)
            return None

    def lock_holder(self, path: str, field: str) -> tuple[bool, int | None]:
        """(known, holder) of an fcntl lock on the file (HostFS.lock_holder); (False, None)
        when it cannot be told."""
        try:
            return True, self.fs.lock_holder(path)
        except HostReadError as exc:
            self.unknown(field, path, exc.reason)
            return False, None

    def link_name(self, path: str, field: str) -> str | None:
        try:
            return self.fs.readlink_basename(path)
        except HostReadError as exc:
            self.unknown(field, path, exc.reason)
            return None
