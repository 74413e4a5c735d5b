"""The dpkg status reader held to `dpkg-query --admindir DIR -W` (issue #25): on assembled
status files (every Status combination, multi-arch, the malformed shapes dpkg refuses),
generated files and this machine's own /var/lib/dpkg/status, our reader refuses exactly the
files dpkg-query refuses, and otherwise lists what it lists: `${binary:Package}`, `${Version}`
and `${db:Status-Abbrev}` of every package that is not `not-installed`.

dpkg 1.21 (Debian 12) answered; what newer dpkg (Ubuntu 24.04: 1.22.6, 26.04: later) may read
differently is said where it matters:
- a whitespace-only line is a blank continuation line to dpkg, not a separator: dpkg 1.21 warns
  ("blank line in value") and reads on, so the next stanza's Package is a duplicate field and
  the file is refused. A newer dpkg that made the warning an error refuses the same files and
  one more shape (a whitespace-only line before a real blank line), which our reader accepts.
- CRLF: dpkg trims the `\\r` at the end of each value, so a one-stanza CRLF file reads; in a
  longer one the `\\r` line between stanzas is a whitespace-only line (above): refused.
- an installed package without an Architecture field: dpkg 1.21 warns and lists it.

Divergences kept (the generator avoids them or the check allows them, each named):
- two stanzas of one package and architecture: dpkg refuses some (two config-files stanzas)
  and lets the later replace the earlier in others (an installed stanza, then a not-installed
  one: the package reads as absent); our reader refuses all, since which stanza is true is
  unknown.
- a NUL or ^Z byte anywhere: refused by our reader, read by dpkg in some places; a status
  file dpkg writes holds neither.
- one byte after the final newline (`...\\n ` or `...\\nx`): dpkg 1.21's parser reads the
  character after a newline and, finding itself at the end of the file, ends the stanza without
  looking at it, so the file reads; two bytes there are refused ("missing final newline"). Our
  reader refuses all of them as a file without a final newline: dpkg never writes one, and an
  off-by-one of one dpkg version is no rule to follow (found by the generated files in CI).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magicstick_host.domain.parsers import ParseError
from magicstick_host.domain.parsers.dpkg_status import (
    FLAGS,
    STATES,
    WANTS,
    DpkgStanza,
    parse_dpkg_status,
)
from magicstick_host.domain.versions import _split
from tests.owners.dpkg_oracle import query_status, tool

pytestmark = pytest.mark.real_commands

Row = tuple[str, str, str]


def native_architecture() -> str:
    return subprocess.run([tool("dpkg"), "--print-architecture"], capture_output=True,
                          text=True, check=True).stdout.strip()


NATIVE = native_architecture()


def _described(version: str | None) -> str:
    """`${Version}` as dpkg prints it: epoch only when not 0, read as dpkg reads it."""
    if version is None:
        return ""
    v = _split(version)
    return f"{v.epoch}:" * bool(v.epoch) + v.upstream + f"-{v.revision}" * bool(v.revision)


def _binary_package(s: DpkgStanza) -> str:
    arch = s.architecture or ""
    qualified = arch not in ("", "all") and (s.multi_arch == "same" or arch != NATIVE)
    return f"{s.package}:{arch}" if qualified else s.package


def ours(text: str) -> tuple[Row, ...] | None:
    """Our reader's answer in dpkg-query's terms; None when it refuses the file."""
    try:
        stanzas = parse_dpkg_status(text)
    except ParseError:
        return None
    return tuple(sorted((_binary_package(s), _described(s.version), s.abbrev)
                        for s in stanzas if s.state != "not-installed"))


def duplicate_slot(text: str) -> bool:
    """Two stanzas of one package and architecture (a divergence the module names)."""
    seen: set[tuple[str, str]] = set()
    for block in text.replace("\r", "").split("\n\n"):
        fields = dict(line.split(":", 1) for line in block.split("\n")
                      if ":" in line and line[:1] not in (" ", "\t"))
        fields = {k.strip().lower(): v.strip() for k, v in fields.items()}
        slot = (fields.get("package", "").lower(), fields.get("architecture", ""))
        if slot[0] in ("",):
            continue
        if slot in seen:
            return True
        seen.add(slot)
    return False


def one_byte_after_the_last_newline(text: str) -> bool:
    data = text.encode("utf-8")
    return len(data) >= 2 and data[-2:-1] == b"\n" and data[-1:] != b"\n"


def test_one_byte_after_the_last_newline_is_the_kept_divergence(tmp_path: Path) -> None:
    """dpkg 1.21 reads these; ours refuses them (the module's docstring says why). Fails when
    a dpkg starts refusing them too, and the divergence can go."""
    base = stanza("a", "install ok installed")
    for tail in (" ", "\t", "x", "\n "):
        theirs = query_status(tmp_path, (base + tail).encode("utf-8"))
        assert not theirs.refused and theirs.rows == (("a", "1.0", "ii "),), repr(tail)
        assert ours(base + tail) is None, repr(tail)
    assert query_status(tmp_path, (base + "  ").encode("utf-8")).refused


def hold(tmp_path: Path, text: str) -> tuple[Row, ...] | None:
    """Assert that our reader and dpkg-query agree on `text`; return the rows (None: both
    refused)."""
    theirs = query_status(tmp_path, text.encode("utf-8"))
    mine = ours(text)
    if mine is None and not theirs.refused and duplicate_slot(text):
        return None  # the kept divergence: a second stanza of one slot
    if mine is None and not theirs.refused and one_byte_after_the_last_newline(text):
        return None  # the kept divergence: dpkg 1.21 drops that byte unread
    if theirs.refused:
        assert mine is None, f"dpkg-query refuses the file ({theirs.errors}); ours read {mine}"
        return None
    assert mine is not None, f"dpkg-query reads the file; ours refuses it:\n{text}"
    assert mine == tuple(sorted(theirs.rows)), text
    return mine


def stanza(name: str, status: str | None, *, arch: str | None = "amd64",
           version: str | None = "1.0", extra: str = "") -> str:
    lines = [f"Package: {name}"]
    if status is not None:
        lines.append(f"Status: {status}")
    lines += ["Maintainer: m <m@example.org>"]
    if arch is not None:
        lines.append(f"Architecture: {arch}")
    if version is not None:
        lines.append(f"Version: {version}")
    lines.append("Description: a package\n multi-line text\n .\n more")
    return "\n".join(lines) + "\n" + extra


def _trigger_fields(state: str) -> str:
    """The fields a state needs to be consistent (dpkg checks them)."""
    if state == "triggers-pending":
        return "Triggers-Pending: update-initramfs\n"
    if state == "triggers-awaited":
        return "Triggers-Awaited: initramfs-tools\n"
    return ""


COMBINATIONS = [(w, f, s) for w in WANTS for f in FLAGS for s in STATES]


def test_every_status_combination_in_one_file(tmp_path: Path) -> None:
    """All 80 want x flag x status combinations, each consistent, in one database."""
    text = "\n".join(
        stanza(f"p{i}", f"{w} {f} {s}", extra=_trigger_fields(s))
        for i, (w, f, s) in enumerate(COMBINATIONS))
    rows = hold(tmp_path, text)
    assert rows is not None and len(rows) == len([c for c in COMBINATIONS if c[2] !=
                                                  "not-installed"])


@pytest.mark.parametrize(("want", "flag", "state"), COMBINATIONS)
def test_each_status_combination_without_its_trigger_fields_or_version(
    tmp_path: Path, want: str, flag: str, state: str
) -> None:
    """The same combination without the fields dpkg requires of it (triggers, a Version),
    and with trigger fields it forbids: dpkg refuses some, and so must we."""
    status = f"{want} {flag} {state}"
    hold(tmp_path, stanza("p", status))
    hold(tmp_path, stanza("p", status, version=None, extra=_trigger_fields(state)))
    hold(tmp_path, stanza("p", status, extra="Triggers-Pending: x\nTriggers-Awaited: y\n"))
    hold(tmp_path, stanza("p", status, extra="Config-Version: 0.9\n" + _trigger_fields(state)))


II = "install ok installed"

SHAPES = {
    "crlf, one stanza": stanza("a", II).replace("\n", "\r\n"),
    "crlf, two stanzas": (stanza("a", II) + "\n" + stanza("b", II)).replace("\n", "\r\n"),
    "a whitespace-only separator": stanza("a", II) + " \n" + stanza("b", II),
    "a tab-only separator": stanza("a", II) + "\t\n" + stanza("b", II),
    "a whitespace-only line, then a blank one": stanza("a", II) + " \n\n" + stanza("b", II),
    "a whitespace-only line first": " \n" + stanza("a", II),
    "no final newline": stanza("a", II).rstrip("\n"),
    "two blank lines between": stanza("a", II) + "\n\n" + stanza("b", II),
    "blank lines first and last": "\n\n" + stanza("a", II) + "\n\n",
    "an unknown status word": stanza("a", "install ok frobbed"),
    "an unknown want": stanza("a", "frob ok installed"),
    "the old hold flag": stanza("a", "install hold installed"),
    "four words": stanza("a", "install ok installed x"),
    "upper case words": stanza("a", "Install OK Installed"),
    "tabs between words": stanza("a", "install\tok\t installed"),
    "a status over two lines": stanza("a", "install ok\n installed"),
    "an empty status": stanza("a", ""),
    "a duplicate stanza": stanza("a", II) + "\n" + stanza("a", II),
    "one package on two architectures": stanza("a", II) + "\n" + stanza("a", II, arch="i386"),
    "Multi-Arch: same on both": (stanza("a", II, extra="Multi-Arch: same\n") + "\n"
                                 + stanza("a", II, arch="i386", extra="Multi-Arch: same\n")),
    "Multi-Arch: same, versions differ": (
        stanza("a", II, extra="Multi-Arch: same\n") + "\n"
        + stanza("a", II, arch="i386", version="2.0", extra="Multi-Arch: same\n")),
    "Multi-Arch: same on one": (stanza("a", II, extra="Multi-Arch: same\n") + "\n"
                                + stanza("a", II, arch="i386")),
    "all and amd64": stanza("a", II, arch="all") + "\n" + stanza("a", II),
    "Multi-Arch: same on all": stanza("a", II, arch="all", extra="Multi-Arch: same\n"),
    "Multi-Arch: same, no Architecture": stanza("a", "purge ok not-installed", arch=None,
                                                extra="Multi-Arch: same\n"),
    "a foreign architecture": stanza("a", II, arch="i386", extra="Multi-Arch: foreign\n"),
    "an unknown Multi-Arch": stanza("a", II, extra="Multi-Arch: bogus\n"),
    "installed here, config-files there": stanza("a", II) + "\n" + stanza(
        "a", "deinstall ok config-files", arch="i386"),
    "installed here, not-installed there": stanza("a", II) + "\n" + stanza(
        "a", "purge ok not-installed", arch="i386", version=None),
    "a non-ascii field name": stanza("a", II, extra="Fïeld: x\n") + "\n" + stanza("b", II),
    "a blank before the colon": "Package : a\nStatus: install ok installed\nVersion: 1\n",
    "a field name with a hyphen first": stanza("a", II, extra="-X: y\n"),
    "a duplicate user field": stanza("a", II, extra="X-A: 1\nx-a: 2\n"),
    "a duplicate field in another case": stanza("a", II, extra="version: 2\n"),
    "no colon": stanza("a", II, extra="Field\n"),
    "no Package": "Status: install ok installed\nArchitecture: all\nVersion: 1\n",
    "no Status": "Package: a\nVersion: 1\n",
    "no Architecture": "Package: a\nStatus: install ok installed\nVersion: 1\n",
    "an upper-case name": stanza("Linux-Generic", II),
    "a version dpkg warns about": stanza("a", II, version="a1.0"),
    "a version with a blank": stanza("a", II, version="1.0 x"),
    "a version over two lines": stanza("a", II, version="1.0\n 2"),
    "an epoch too big": stanza("a", II, version="2147483648:1"),
    "the largest epoch": stanza("a", II, version="2147483647:1"),
    "an epoch written 00": stanza("a", II, version="00:1.0-1"),
    "an empty version": stanza("a", II, version=""),
    "a colon in upstream": stanza("a", II, version="1:2:3-4"),
    "a continuation line first": " x\n" + stanza("a", II),
    "a package name with a space": stanza("linux generic", II) + "\n" + stanza("b", II),
    "a package name with a slash": stanza("a/b", II),
    "a package name starting with a hyphen": stanza("-a", II),
    "a package name starting with a dot": stanza(".a", II),
    "a package name with a plus, a dot and an underscore": stanza("a+b.c_d", II),
    "a non-ascii package name": stanza("pä", II),
    "a package name that is one digit": stanza("0", II),
    "a kernel awaiting its initramfs": (
        stanza("linux-image-7.0.0-31-generic", "install ok triggers-awaited",
               version="7.0.0-31.31", extra="Triggers-Awaited: initramfs-tools\n") + "\n"
        + stanza("initramfs-tools", "install ok triggers-pending", arch="all",
                 version="0.142ubuntu25", extra="Triggers-Pending: update-initramfs\n")),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_assembled_shapes(tmp_path: Path, shape: str) -> None:
    hold(tmp_path, SHAPES[shape])


def test_the_named_shapes_are_refused_or_read_as_issue_25_says(tmp_path: Path) -> None:
    """What issue #25 named, checked against dpkg above, spelled out: refused files give no
    versions; a non-ASCII field name does not make every package unknown."""
    for refused in ("crlf, two stanzas", "a whitespace-only separator", "no final newline",
                    "an unknown status word", "a duplicate stanza"):
        assert ours(SHAPES[refused]) is None, refused
    assert ours(SHAPES["a non-ascii field name"]) == (("a", "1.0", "ii "), ("b", "1.0", "ii "))
    assert ours(SHAPES["a kernel awaiting its initramfs"]) == (
        ("initramfs-tools", "0.142ubuntu25", "it "),
        ("linux-image-7.0.0-31-generic", "7.0.0-31.31", "iW "))


def test_a_package_name_dpkg_refuses_makes_the_whole_file_unknown(tmp_path: Path) -> None:
    """Issue #34, held to dpkg-query: one stanza named `linux generic` and dpkg refuses the
    file whole, so the other stanza's version is not an answer either."""
    assert ours(SHAPES["a package name with a space"]) is None
    assert ours(stanza("b", II)) == (("b", "1.0", "ii "),)


# --- generated files

_names = st.sampled_from(["a", "b", "c", "d", "e", "linux-generic", "initramfs-tools",
                         "Linux-Image-7.0.0-31-generic", "linux generic", "a:b", "+a", "é"])
_archs = st.sampled_from(["amd64", "amd64", "amd64", "i386", "all", None])
_bad_statuses = st.sampled_from([None, "install ok frobbed", "install  ok installed",
                                 "hold ok installed ", "install ok"])
_versions = st.sampled_from(["1.0", "7.0.0-31.31~24.04.1", "1:2.0-1", "0:1", "1.0", None, "a1",
                             "1 0"])
_extras = st.lists(st.sampled_from([
    "Multi-Arch: same\n", "Multi-Arch: foreign\n", "Triggers-Pending: t\n",
    "Triggers-Awaited: p\n", "Config-Version: 0.9\n", "Fïeld: x\n", "Conffiles:\n /etc/x 0\n",
    "Depends: libc6 (>= 2.34)\n", " \n",
]), max_size=2, unique=True)
_separators = st.sampled_from(["\n"] * 12 + ["\n\n", " \n", "\r\n"])


@st.composite
def status_files(draw: st.DrawFn) -> str:
    """Mostly files dpkg reads (consistent trigger fields, good versions), some it refuses."""
    n = draw(st.integers(1, 6))
    parts = []
    for i in range(n):
        name = f"p{i}" if draw(st.integers(0, 2)) else draw(_names)  # some meet twice
        want, flag, state = draw(st.sampled_from(COMBINATIONS))
        status = f"{want} {flag} {state}"
        if draw(st.integers(0, 9)) == 0:
            status = draw(_bad_statuses)
        extra = _trigger_fields(state) if draw(st.integers(0, 5)) else ""
        if draw(st.integers(0, 2)) == 0:
            extra += "".join(draw(_extras))
        version = "1.0" if draw(st.integers(0, 2)) else draw(_versions)
        parts.append(stanza(name, status, arch=draw(_archs), version=version,
                            extra=extra))
        parts.append(draw(_separators))
    text = "".join(parts[:-1])
    if draw(st.integers(0, 19)) == 0:
        text = text.replace("\n", "\r\n")
    if draw(st.integers(0, 19)) == 0:
        text = text.rstrip("\n")
    return text


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=status_files())
def test_generated_status_files(tmp_path: Path, text: str) -> None:
    hold(tmp_path, text)


def test_the_machines_own_status_file(tmp_path: Path) -> None:
    text = Path("/var/lib/dpkg/status").read_text(encoding="utf-8")
    rows = hold(tmp_path, text)
    assert rows is not None and len(rows) > 50
