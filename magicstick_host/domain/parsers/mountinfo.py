"""/proc/self/mountinfo (proc(5)): one mount per line, for the model-cache mount check.

    36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
    (1)(2) (3)   (4)   (5)      (6)      (7)   (8) (9)   (10)        (11)

The root (4) and the mount point (5) escape space, tab, newline and backslash as `\\040`,
`\\011`, `\\012` and `\\134` (the kernel's `mangle`). Any other shape is a ParseError: a mount
table that cannot be read is "cannot tell", never "no mounts".
"""

from __future__ import annotations

import re

from magicstick_host.domain.parsers.common import ParseError, shorten, split_lines
from magicstick_host.lite_dataclasses import dataclass

# the kernel escapes exactly these four characters, always as three octal digits
_ESCAPES = {"040": " ", "011": "\t", "012": "\n", "134": "\\"}
_ESCAPE = re.compile(r"\\([0-7]{3})")
_ID = re.compile(r"[0-9]{1,10}")
_DEV = re.compile(r"([0-9]{1,10}):([0-9]{1,10})")
# an optional field: shared:N, master:N, propagate_from:N, unbindable
_OPTIONAL = re.compile(r"[a-z_]+(:[0-9]+)?")


@dataclass(frozen=True)
class Mount:
    mount_id: int
    parent_id: int
    major: int
    minor: int
    root: str  # the path inside the filesystem that is mounted (a bind mount's source)
    mount_point: str  # absolute, unescaped
    fstype: str


def unescape(field: str, what: str) -> str:
    def replace(match: re.Match[str]) -> str:
        char = _ESCAPES.get(match.group(1))
        if char is None:
            raise ParseError(f"{what}: unknown escape \\{match.group(1)}")
        return char

    text = _ESCAPE.sub(replace, field)
    # a backslash that is not one of the four escapes: not what the kernel writes
    if "\\" in _ESCAPE.sub("", field):
        raise ParseError(f"{what}: stray backslash in {shorten(field)!r}")
    return text


def parse_mount_line(line: str) -> Mount:
    fields = line.split(" ")
    try:
        dash = fields.index("-", 6)
    except ValueError:
        raise ParseError(f"no ' - ' separator: {shorten(line)!r}") from None
    if len(fields) != dash + 4:
        raise ParseError(f"expected fstype, source and options after ' - ': {shorten(line)!r}")
    mount_id, parent_id, dev, root, point = fields[:5]
    if not (_ID.fullmatch(mount_id) and _ID.fullmatch(parent_id)):
        raise ParseError(f"mount IDs are not numbers: {shorten(line)!r}")
    dev_match = _DEV.fullmatch(dev)
    if dev_match is None:
        raise ParseError(f"not major:minor: {shorten(dev)!r}")
    if not all(_OPTIONAL.fullmatch(f) for f in fields[6:dash]):
        raise ParseError(f"unexpected optional field in {shorten(line)!r}")
    mount_point = unescape(point, "mount point")
    if not mount_point.startswith("/"):
        raise ParseError(f"mount point is not absolute: {shorten(mount_point)!r}")
    fstype = fields[dash + 1]
    if not fstype:
        raise ParseError(f"empty filesystem type: {shorten(line)!r}")
    return Mount(
        mount_id=int(mount_id),
        parent_id=int(parent_id),
        major=int(dev_match.group(1)),
        minor=int(dev_match.group(2)),
        root=unescape(root, "root"),
        mount_point=mount_point,
        fstype=fstype,
    )


def parse_mountinfo(text: str) -> tuple[Mount, ...]:
    """Every mount, in the kernel's order. An empty table is garbage (there is always `/`)."""
    mounts = []
    for lineno, line in enumerate(split_lines(text), start=1):
        try:
            mounts.append(parse_mount_line(line))
        except ParseError as exc:
            raise ParseError(f"line {lineno}: {exc}") from None
    if not mounts:
        raise ParseError("no mounts")
    return tuple(mounts)
