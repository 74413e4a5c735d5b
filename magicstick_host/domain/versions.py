"""Debian version comparison (deb-version(7)), so "never downgrade" means what dpkg means.

`[epoch:]upstream[-revision]`; letters sort before non-letters and `~` before everything,
even the end of the string, which is why `7.0.0-31.31~24.04.1 < 7.0.0-31.31`.
"""

from __future__ import annotations

from magicstick_host.lazy_pattern import LazyPattern
from magicstick_host.lite_dataclasses import dataclass

_UPSTREAM = LazyPattern(r"^[0-9][A-Za-z0-9.+~-]*$")
_REVISION = LazyPattern(r"^[A-Za-z0-9.+~]+$")


# not a NamedTuple: its class is generated and compiled at import, over 1 ms of every tick
@dataclass(frozen=True)
class DebianVersion:
    epoch: int
    upstream: str
    revision: str


def parse_version(text: str) -> DebianVersion:
    """Split a version; raises ValueError for anything dpkg would refuse."""
    epoch = 0
    rest = text
    if ":" in rest:
        head, rest = rest.split(":", 1)
        if not head.isdigit():
            raise ValueError(f"bad epoch in version {text!r}")
        epoch = int(head)
    upstream, revision = rest, ""
    if "-" in rest:
        upstream, revision = rest.rsplit("-", 1)
        if not _REVISION.match(revision):
            raise ValueError(f"bad revision in version {text!r}")
    if not _UPSTREAM.match(upstream):
        raise ValueError(f"bad upstream version in {text!r}")
    return DebianVersion(epoch, upstream, revision)


def is_valid_version(text: str) -> bool:
    try:
        parse_version(text)
    except ValueError:
        return False
    return True


def _order(char: str) -> int:
    if char == "~":
        return -1
    if char.isalpha():
        return ord(char)
    return ord(char) + 256


def _compare_part(a: str, b: str) -> int:
    i = j = 0
    while i < len(a) or j < len(b):
        # the non-digit run, character by character; the end of a string sorts as 0
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ca = _order(a[i]) if i < len(a) and not a[i].isdigit() else 0
            cb = _order(b[j]) if j < len(b) and not b[j].isdigit() else 0
            if ca != cb:
                return -1 if ca < cb else 1
            if i < len(a) and not a[i].isdigit():
                i += 1
            if j < len(b) and not b[j].isdigit():
                j += 1
        # the digit run, numerically
        start_i, start_j = i, j
        while i < len(a) and a[i].isdigit():
            i += 1
        while j < len(b) and b[j].isdigit():
            j += 1
        na = int(a[start_i:i] or "0")
        nb = int(b[start_j:j] or "0")
        if na != nb:
            return -1 if na < nb else 1
    return 0


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as dpkg --compare-versions; raises ValueError on an invalid version."""
    va, vb = parse_version(a), parse_version(b)
    if va.epoch != vb.epoch:
        return -1 if va.epoch < vb.epoch else 1
    return _compare_part(va.upstream, vb.upstream) or _compare_part(va.revision, vb.revision)
