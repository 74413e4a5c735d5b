"""`model-cache.json` in the state directory: the last walk of the model caches.

A cache, not a record: `load` answers None for anything it cannot use (missing, a symlink, a
foreign owner or loose mode, torn, not JSON, not valid against the shipped schema), and the
caller simply walks again. `save` writes a 0600 file atomically (temporary file, fsync,
rename) and reports failure as False: a cache that cannot be written costs a walk, nothing else.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from magicstick_host import schemas
from magicstick_host.domain.strict_json import CACHE_FILE as BOUNDS
from magicstick_host.errors import MagicstickError
from magicstick_host.ports.safe_files import fsync_dir, open_checked, read_all, write_all

if TYPE_CHECKING:
    from typing import Any

CACHE_FILE = "model-cache.json"
SCHEMA = "model-cache-inventory"
# a walk of 100,000 inodes records at most that many directories (about 100 bytes each)
MAX_BYTES = 32 * 1024 * 1024
ROLE = "state file"  # the same rules: a regular 0600 file owned by the worker
# the blockers last read from Kubernetes, reused between the report's reads
WORKLOADS_FILE = "model-cache-workloads.json"
WORKLOADS_SCHEMA = "model-cache-workloads"


class ModelCacheStore:
    """`file` and `schema` name another cache of the same kind (the workloads' blockers:
    WORKLOADS_FILE, WORKLOADS_SCHEMA)."""

    def __init__(
        self,
        directory: Path,
        *,
        owner_uid: int | None = None,
        file: str = CACHE_FILE,
        schema: str = SCHEMA,
    ) -> None:
        self.directory = Path(directory)
        self.owner_uid = os.geteuid() if owner_uid is None else owner_uid
        self.file = file
        self.schema = schema

    @property
    def path(self) -> Path:
        return self.directory / self.file

    def load(self) -> dict[str, Any] | None:
        try:
            fd = open_checked(self.path, os.O_RDONLY | os.O_NONBLOCK, role=ROLE,
                              owner_uid=self.owner_uid)
        except (OSError, MagicstickError):
            return None
        try:
            data = read_all(fd, MAX_BYTES)
        except OSError:
            return None
        finally:
            os.close(fd)
        try:
            doc = BOUNDS.loads(data)  # never RecursionError in the schema check below
        except ValueError:
            return None
        if schemas.errors(self.schema, doc):
            return None
        assert isinstance(doc, dict)
        return doc

    def save(self, doc: dict[str, Any]) -> bool:
        problems = schemas.errors(self.schema, doc)
        if problems:  # a bug: never write what load would refuse
            raise ValueError(f"refusing to save an invalid {self.file}: {problems[:3]}")
        data = json.dumps(doc, separators=(",", ":"), allow_nan=False).encode("utf-8")
        temp = self.directory / f".{self.file}.tmp"
        try:
            temp.unlink(missing_ok=True)  # a leftover from a crash (unlink never follows)
            fd = open_checked(temp, os.O_WRONLY, role=ROLE, owner_uid=self.owner_uid,
                              create=True)
            try:
                write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, self.path)
            fsync_dir(self.directory)
        except (OSError, MagicstickError):
            temp.unlink(missing_ok=True)
            return False
        return True
