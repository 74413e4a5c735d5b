"""RAM size and the effective cgroup v2 memory limit of this process."""

from __future__ import annotations

from magicstick_host.collect.reader import Reader
from magicstick_host.domain.evidence import MemoryInfo
from magicstick_host.domain.parsers.cgroup import parse_cgroup_v2_path, parse_memory_max
from magicstick_host.domain.parsers.common import ParseError
from magicstick_host.domain.parsers.meminfo import parse_mem_total_kib
from magicstick_host.ports.hostfs import HostReadError

CGROUP_ROOT = "/sys/fs/cgroup"
_FIELD = "memory.cgroup_limit_bytes"


def collect_memory(r: Reader) -> MemoryInfo:
    return MemoryInfo(
        mem_total_kib=r.parsed("/proc/meminfo", "memory.mem_total_kib", parse_mem_total_kib),
        cgroup_limit_bytes=_cgroup_limit(r),
    )


def _cgroup_limit(r: Reader) -> int | None:
    """The minimum memory.max from our cgroup up to (not including) the root cgroup, which
    has no memory.max. A level without the file has no memory controller: no limit there."""
    path = r.parsed("/proc/self/cgroup", _FIELD, parse_cgroup_v2_path)
    if path is None:
        return None
    parts = [part for part in path.split("/") if part]
    if any(part in (".", "..") for part in parts):
        r.unknown(_FIELD, "/proc/self/cgroup", "cgroup path is not canonical")
        return None
    limit: int | None = None
    for depth in range(len(parts), 0, -1):
        file = "/".join([CGROUP_ROOT, *parts[:depth], "memory.max"])
        try:
            value = parse_memory_max(r.fs.read_text(file))
        except HostReadError as exc:
            if exc.missing:
                continue
            r.unknown(_FIELD, file, exc.reason)
            return None
        except ParseError as exc:
            r.unknown(_FIELD, file, str(exc))
            return None
        if value is not None:
            limit = value if limit is None else min(limit, value)
    return limit
