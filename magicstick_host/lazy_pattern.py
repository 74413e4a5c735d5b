"""A regular expression compiled the first time it is used, not when its module is imported.

`re.compile` at import is about a tenth of a millisecond per pattern in a fresh process (the
compiler is pure Python), and the timer's tick imports some fifty modules' patterns of which it
uses fewer than half: the others belong to parsers of what an idle tick does not read (the
playbook log, `iw` scans, GRUB files, a kernel's version signature). The timer starts the tick
5,760 times a day (issue "The idle tick at the floor"). A LazyPattern answers as the compiled
pattern would (tests/test_lazy_pattern.py), and compiles once per process.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator

__all__ = ["LazyPattern"]


class LazyPattern:
    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def fullmatch(self, string: str, pos: int = 0,
                  endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.fullmatch(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.match(string, pos, endpos)

    def search(self, string: str, pos: int = 0,
               endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.search(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0,
                 endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str,
            count: int = 0) -> str:
        return self.compiled.sub(repl, string, count)

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r})"
