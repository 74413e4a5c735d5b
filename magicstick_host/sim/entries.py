"""The rendered form of a host: relative POSIX paths mapped to files, symlinks and directories."""

from __future__ import annotations

import posixpath

from magicstick_host.lite_dataclasses import dataclass


@dataclass(frozen=True)
class File:
    text: str


@dataclass(frozen=True)
class Link:
    target: str  # always relative, resolved from the link's directory


@dataclass(frozen=True)
class Dir:
    pass


@dataclass(frozen=True)
class Socket:
    """A socket inode (as `test -S` sees it); nothing listens on it."""


Entry = File | Link | Dir | Socket


class Tree:
    """An ordered set of entries. Adding the same path twice with different content is a bug."""

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}

    def _add(self, path: str, entry: Entry) -> None:
        norm = posixpath.normpath(path)
        if norm != path or path.startswith(("/", "..")):
            raise ValueError(f"not a clean relative path: {path!r}")
        old = self.entries.get(path)
        if old is not None and old != entry:
            raise ValueError(f"conflicting entries for {path}: {old} / {entry}")
        self.entries[path] = entry

    def file(self, path: str, text: str) -> None:
        self._add(path, File(text))

    def line(self, path: str, value: object) -> None:
        """A one-value file, as sysfs and procfs write them: the value plus a newline."""
        self._add(path, File(f"{value}\n"))

    def link(self, path: str, target: str) -> None:
        if target.startswith("/"):
            raise ValueError(f"symlinks must be relative: {path} -> {target}")
        self._add(path, Link(target))

    def dir(self, path: str) -> None:
        self._add(path, Dir())

    def socket(self, path: str) -> None:
        self._add(path, Socket())
