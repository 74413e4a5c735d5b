"""What the timer's ticks last logged: the conditions that held (Kubernetes unreachable, a
blocked state directory, ...), so that one that persists is logged when it starts and when it
ends, not every 15 s.

It lives in the service's runtime directory (`RuntimeDirectory=magicstick-host`, kept between
ticks by `RuntimeDirectoryPreserve=yes`; systemd names it in $RUNTIME_DIRECTORY), a tmpfs:
after a reboot every condition is logged once again. Without $RUNTIME_DIRECTORY (a tick at the
console) there is no memory and every line is printed. Best effort throughout: a memory that
cannot be read or written only makes the ticks say things again, it never stops one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from magicstick_host.domain.strict_json import loads_strict
from magicstick_host.ports.command_memo import FileCommandMemo

RUNTIME_DIRECTORY_ENV = "RUNTIME_DIRECTORY"
FILE_NAME = "logged-conditions.json"
MAX_BYTES = 64 * 1024
# one memo file under the rules of every memo (ports/command_memo.py: a root-owned directory
# no one else can write, the file root 0600, checked on the open descriptors): a planted or
# foreign file is ignored, which only makes the ticks say things again
KEY = "logged-conditions"


class LogMemory:
    def __init__(self, directory: Path | None) -> None:
        self.path = directory / FILE_NAME if directory is not None else None
        self._memo = (FileCommandMemo(self.path, max_age_s=float("inf"))
                      if self.path is not None else None)

    @staticmethod
    def from_environment() -> LogMemory:
        value = os.environ.get(RUNTIME_DIRECTORY_ENV, "")
        # systemd lists one directory per RuntimeDirectory= entry, separated by ":"
        first = value.split(":")[0]
        return LogMemory(Path(first) if first else None)

    @property
    def enabled(self) -> bool:
        return self.path is not None

    def load(self) -> dict[str, str]:
        text = self._memo.recall(KEY) if self._memo is not None else None
        if text is None or len(text) > MAX_BYTES:
            return {}
        try:
            doc = loads_strict(text.encode("utf-8", "surrogatepass"))
        except ValueError:
            return {}
        if not isinstance(doc, dict):
            return {}
        return {str(k): v for k, v in doc.items() if isinstance(v, str)}

    def save(self, conditions: dict[str, str]) -> None:
        if self._memo is not None:  # best effort, as every memo
            self._memo.remember(KEY, json.dumps(conditions, sort_keys=True))
