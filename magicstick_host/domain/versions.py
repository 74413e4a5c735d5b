"""Debian version comparison (deb-version(7)), so "never downgrade" means what dpkg means.

`[epoch:]upstream[-revision]`; letters sort before non-letters and `~` before everything,
even the end of the string, which is why `7.0.0-31.31~24.04.1 < 7.0.0-31.31`.

Valid means what `dpkg --compare-versions` takes without a word (dpkg's `parseversion`, held
to dpkg itself in tests/owners/test_dpkg_versions.py):
- blanks (space, tab) around the version are dropped; a blank inside it is refused;
- the epoch is everything before the first `:`, read as C's `strtol` reads it (leading white
  space and a sign allowed), from 0 to 2^31-1; so `1:2:3` is epoch 1, upstream `2:3`;
- the revision is everything after the last `-`, never empty;
- upstream starts with an ASCII digit and holds ASCII letters, digits and `.+~-:`; the
  revision ASCII letters, digits and `.+~`.
dpkg *warns* about a version that breaks the last rule (a bad character, a first character
that is not a digit, a non-ASCII digit) and then compares it anyway; here it is refused, as
a version dpkg itself calls "bad syntax".
"""

from __future__ import annotations

from magicstick_host.lite_dataclasses import dataclass

# dpkg's epoch is a C int
EPOCH_MAX = 2**31 - 1
_DIGITS = frozenset("0123456789")
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_UPSTREAM_CHARS = _DIGITS | _LETTERS | frozenset(".-+~:")
_REVISION_CHARS = _DIGITS | _LETTERS | frozenset(".+~")
# C's isspace() in the C locale, which strtol skips before the epoch's digits
_C_SPACE = " \t\n\v\f\r"


# not a NamedTuple: its class is generated and compiled at import, over 1 ms of every tick
@dataclass(frozen=True)
class DebianVersion:
    epoch: int
    upstream: str
    revision: str


def _epoch(head: str, text: str) -> int:
    """The epoch as dpkg reads it: strtol(3) in base 10 must use all of `head`."""
    digits = head.lstrip(_C_SPACE)
    negative = digits[:1] == "-"
    if digits[:1] in ("+", "-"):
        digits = digits[1:]
    if not digits:
        raise ValueError(f"empty epoch in version {text!r}")
    if not set(digits) <= _DIGITS:
        raise ValueError(f"epoch is not a number in version {text!r}")
    value = int(digits)
    if negative and value:
        raise ValueError(f"negative epoch in version {text!r}")
    if value > EPOCH_MAX:
        raise ValueError(f"epoch above {EPOCH_MAX} in version {text!r}")
    return value


def _split(text: str) -> DebianVersion:
    """The version's parts, or ValueError for what dpkg treats as an error everywhere (in a
    status file too): empty, a blank inside, a bad epoch, nothing after it, an empty revision
    or upstream version."""
    rest = text.strip(" \t")
    if not rest:
        raise ValueError(f"empty version {text!r}")
    if " " in rest or "\t" in rest:
        raise ValueError(f"blank inside version {text!r}")
    epoch = 0
    if ":" in rest:
        head, rest = rest.split(":", 1)
        epoch = _epoch(head, text)
        if not rest:
            raise ValueError(f"nothing after the epoch in version {text!r}")
    upstream, hyphen, revision = rest.rpartition("-")
    if not hyphen:
        upstream, revision = rest, ""
    elif not revision:
        raise ValueError(f"empty revision in version {text!r}")
    if not upstream:
        raise ValueError(f"empty upstream version in {text!r}")
    return DebianVersion(epoch, upstream, revision)


def parse_version(text: str) -> DebianVersion:
    """Split a version; raises ValueError for anything dpkg calls bad syntax."""
    version = _split(text)
    upstream, revision = version.upstream, version.revision
    if upstream[0] not in _DIGITS or not set(upstream) <= _UPSTREAM_CHARS:
        raise ValueError(f"bad upstream version in {text!r}")
    if not set(revision) <= _REVISION_CHARS:
        raise ValueError(f"bad revision in version {text!r}")
    return version


def dpkg_refuses_version(text: str) -> bool:
    """dpkg refuses a status file holding this version (an error); a version dpkg only warns
    about (bad characters) it reads, and parse_version refuses."""
    try:
        _split(text)
    except ValueError:
        return True
    return False


def is_valid_version(text: str) -> bool:
    try:
        parse_version(text)
    except ValueError:
        return False
    return True


def _order(char: str) -> int:
    if char == "~":
        return -1
    if char in _LETTERS:
        return ord(char)
    return ord(char) + 256


def _compare_part(a: str, b: str) -> int:
    """dpkg's verrevcmp; both parts hold only the ASCII characters parse_version allows."""
    i = j = 0
    while i < len(a) or j < len(b):
        # the non-digit run, character by character; the end of a string sorts as 0
        while (i < len(a) and a[i] not in _DIGITS) or (j < len(b) and b[j] not in _DIGITS):
            ca = _order(a[i]) if i < len(a) and a[i] not in _DIGITS else 0
            cb = _order(b[j]) if j < len(b) and b[j] not in _DIGITS else 0
            if ca != cb:
                return -1 if ca < cb else 1
            if i < len(a) and a[i] not in _DIGITS:
                i += 1
            if j < len(b) and b[j] not in _DIGITS:
                j += 1
        # the digit run, numerically
        start_i, start_j = i, j
        while i < len(a) and a[i] in _DIGITS:
            i += 1
        while j < len(b) and b[j] in _DIGITS:
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
