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

import contextlib
import json
import os
from pathlib import Path

from magicstick_host.domain.strict_json import loads_strict

RUNTIME_DIRECTORY_ENV = "RUNTIME_DIRECTORY"
FILE_NAME = "logged-conditions.json"
MAX_BYTES = 64 * 1024


class LogMemory:
    def __init__(self, directory: Path | None) -> None:
        self.path = directory / FILE_NAME if directory is not None else None

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
        if self.path is None:
            return {}
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return {}
        try:
            data = os.read(fd, MAX_BYTES + 1)
        except OSError:
            return {}
        finally:
            os.close(fd)
        try:
            doc = loads_strict(data)
        except ValueError:
            return {}
        if not isinstance(doc, dict):
            return {}
        return {str(k): v for k, v in doc.items() if isinstance(v, str)}

    def save(self, conditions: dict[str, str]) -> None:
        if self.path is None:
            return
        temp = self.path.with_name(f".{FILE_NAME}.{os.urandom(4).hex()}")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, json.dumps(conditions, sort_keys=True).encode("utf-8"))
            finally:
                os.close(fd)
            os.replace(temp, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                temp.unlink(missing_ok=True)
