"""os-release held to its owners: systemd's own parser and the POSIX shell.

systemd: the test calls `load_os_release_pairs(root)` of the installed libsystemd-shared (the
code every systemd tool uses to read os-release) through ctypes on each generated file, and our
parser must give the same pairs, and refuse exactly the files systemd refuses. A
`systemd-analyze condition ConditionOSRelease=...` run would reach the same code but only
answers equal/not equal, and ignores `--root` (it takes `$SYSTEMD_OS_RELEASE`); the library
call prints the values themselves. No systemd as PID 1 is needed.

The shell: `env -i sh -c '. FILE'` on files written the way os-release(5) says (quoted values,
shell escapes, comments, blank lines, LF line ends): there the shell and systemd agree, and so
must we. Divergences kept, where os-release(5)'s rules end and the two owners differ (we follow
systemd, which is what reads the file on these hosts):
- CRLF: the shell keeps `\\r` in an unquoted value and fails on one after a quote; systemd reads
  `\\r` as a line end. The CRLF twin of a file must read as the file.
- `export KEY=v`: the shell assigns KEY; systemd 252 assigns the key `export KEY`, so KEY stays
  unset (no profile matches on it: the OS reads as unknown, never as a guess).
- unquoted blanks (`A=x y`): the shell runs `y`; systemd keeps `x y`.
- bytes that are not UTF-8 outside every assignment: systemd ignores them, the host file reader
  (ports/hostfs.py) refuses the file (the OS reads as unknown).
"""

from __future__ import annotations

import ctypes
import glob
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from magicstick_host.domain.parsers import ParseError
from magicstick_host.domain.parsers.os_release import parse_os_release

pytestmark = pytest.mark.real_commands

LIBRARY_GLOBS = ("/usr/lib/*/systemd/libsystemd-shared-*.so",
                 "/lib/*/systemd/libsystemd-shared-*.so",
                 "/usr/lib/systemd/libsystemd-shared-*.so")


@cache
def systemd_reader() -> Callable[[bytes, Any], int]:
    found = sorted({p for g in LIBRARY_GLOBS for p in glob.glob(g)})
    assert found, "systemd's libsystemd-shared is required (package systemd)"
    lib = ctypes.CDLL(found[-1])
    pairs = ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p))
    if hasattr(lib, "load_os_release_pairs"):  # systemd 252 (Debian 12, Ubuntu 24.04's 255)
        func = lib.load_os_release_pairs
        func.argtypes = [ctypes.c_char_p, pairs]
        func.restype = ctypes.c_int
        return func
    # later systemd (262 in Debian unstable) no longer exports it; it was open_os_release() and
    # then load_env_file_pairs() on the file, which reads the file itself given no FILE*: the
    # same code on the one file a test root holds
    env_pairs = lib.load_env_file_pairs
    env_pairs.argtypes = [ctypes.c_void_p, ctypes.c_char_p, pairs]
    env_pairs.restype = ctypes.c_int
    return lambda root, out: env_pairs(None, root + b"/etc/os-release", out)


@cache
def systemd_version() -> int:
    """The major version of the libsystemd-shared the tests call (its file name says it)."""
    found = sorted({p for g in LIBRARY_GLOBS for p in glob.glob(g)})
    match = re.search(r"libsystemd-shared-(\d+)", found[-1])
    assert match, found[-1]
    return int(match.group(1))


# systemd 254 changed one thing: a backslash at the end of a comment line no longer continues the
# comment onto the next line. The appliances run 254 or later (Ubuntu 24.04: 255), and so does
# the parser; an older oracle (this machine's Debian 12 has 252) is not asked about such texts.
COMMENT_CONTINUES = 254


def older_comment_rule(text: str) -> bool:
    """The text has a backslash before a line end, which an oracle before 254 may read as a
    continued comment (a superset: the same in a value reads the same in both)."""
    return systemd_version() < COMMENT_CONTINUES and re.search(r"\\[\r\n]", text) is not None


def systemd_pairs(data: bytes) -> dict[str, str] | None:
    """What systemd reads from an os-release holding `data`; None when it refuses it."""
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(f"{root}/etc")
        Path(f"{root}/etc/os-release").write_bytes(data)
        out = ctypes.POINTER(ctypes.c_char_p)()
        rc = systemd_reader()(root.encode(), ctypes.byref(out))
    if rc < 0:
        return None
    items: list[bytes] = []
    while out and out[len(items)] is not None:  # an empty result is a NULL list
        items.append(out[len(items)])
    return {items[i].decode(): items[i + 1].decode() for i in range(0, len(items), 2)}


def ours(data: bytes) -> dict[str, str] | None:
    try:
        text = data.decode("utf-8")  # the reader's strict decoding (ports/hostfs.py)
    except UnicodeDecodeError:
        return None
    try:
        return parse_os_release(text)
    except ParseError:
        return None


def shell_values(data: bytes, keys: list[str]) -> dict[str, str]:
    sh = shutil.which("sh")
    assert sh, "a POSIX shell is required"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "os-release")
        path.write_bytes(data)
        script = ('. "$1" || exit 9; shift; for k; do eval "v=\\${$k+x}"; '
                  '[ "$v" = x ] && eval "printf \'%s=%s\\0\' \\"\\$k\\" \\"\\${$k}\\""; done; true')
        proc = subprocess.run(["env", "-i", sh, "-c", script, "sh", str(path), *keys],
                              capture_output=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    found = [item.decode() for item in proc.stdout.split(b"\0") if item]
    return dict(item.split("=", 1) for item in found)


# -- real files ----------------------------------------------------------------------------

UBUNTU_2404 = (
    'PRETTY_NAME="Ubuntu 24.04.3 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\n'
    'VERSION="24.04.3 LTS (Noble Numbat)"\nVERSION_CODENAME=noble\nID=ubuntu\nID_LIKE=debian\n'
    'HOME_URL="https://www.ubuntu.com/"\nUBUNTU_CODENAME=noble\n'
    'LOGO=ubuntu-logo\n'
)


def test_the_machines_own_os_release_reads_as_systemd_reads_it() -> None:
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        if os.path.exists(path):
            data = Path(path).read_bytes()
            assert ours(data) == systemd_pairs(data) is not None
            return
    pytest.fail("this machine has no os-release")


def test_a_crlf_ubuntu_file_reads_as_its_lf_twin() -> None:
    """The defect of #25: a CRLF file kept `\\r` in ID (or failed on a quoted value), so no
    profile matched."""
    crlf = UBUNTU_2404.replace("\n", "\r\n").encode()
    got = ours(crlf)
    assert got is not None
    assert (got["ID"], got["VERSION_ID"], got["VERSION_CODENAME"]) == ("ubuntu", "24.04", "noble")
    assert got == ours(UBUNTU_2404.encode()) == systemd_pairs(crlf)


def test_export_comments_and_escapes_as_systemd() -> None:
    data = (b'  # a comment\n; another\nexport ID=ubuntu\nID = "ubu\\"ntu"  \n'
            b"NAME='Ub \\ untu'\nPRETTY_NAME=\"a\\$b\\`c\\\\d\\e\"\nX=1\\\n2\nno assignment\n")
    got = ours(data)
    assert got == systemd_pairs(data)
    assert got is not None
    assert got["ID"] == 'ubu"ntu' and got["NAME"] == "Ub \\ untu"
    assert got["PRETTY_NAME"] == "a$b`c\\d\\e" and got["X"] == "12"
    assert got["export ID"] == "ubuntu"


@pytest.mark.parametrize("end", ["\n", "\r", "\r\n"])
def test_a_backslash_at_the_end_of_a_comment_ends_with_the_line(end: str) -> None:
    """Found by the Python 3.14 pass's generated texts against systemd 262 (`;\\<CR>9=`): since
    systemd 254 the line end after a comment's final backslash still ends the comment."""
    data = f"; a comment \\{end}ID=ubuntu{end}".encode()
    assert ours(data) == {"ID": "ubuntu"}
    if systemd_version() >= COMMENT_CONTINUES:
        assert systemd_pairs(data) == {"ID": "ubuntu"}


@pytest.mark.parametrize("data", [b"ID=ubuntu\x00\n", b"ID=\xff\n", b"ID=\xed\xa0\x80\n"])
def test_refused_only_where_systemd_refuses(data: bytes) -> None:
    assert systemd_pairs(data) is None
    assert ours(data) is None


# -- generated files -----------------------------------------------------------------------

# every character the parsers treat specially, and a few plain ones
TRICKY = st.text(alphabet="AIDV_9x=é \t\r\n\"'\\$`#;", max_size=80)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TRICKY)
def test_any_text_reads_as_systemd_reads_it(text: str) -> None:
    assume(not older_comment_rule(text))
    data = text.encode()
    assert ours(data) == systemd_pairs(data)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=40))
def test_any_bytes_are_refused_or_read_as_systemd(data: bytes) -> None:
    assume(not older_comment_rule(data.decode("utf-8", "replace")))
    mine, theirs = ours(data), systemd_pairs(data)
    if mine is None and theirs is not None:
        # kept: systemd checks UTF-8 only in the keys and values it keeps, so bytes that are
        # not UTF-8 in a comment or a line without `=` pass; the host file reader refuses any
        # file that is not UTF-8 (the OS reads as unknown: stricter, never a wrong value)
        with pytest.raises(UnicodeDecodeError):
            data.decode("utf-8")
        return
    assert mine == theirs


KEYS = ["ID", "VERSION_ID", "NAME", "PRETTY_NAME", "VERSION_CODENAME", "ID_LIKE", "LOGO"]
PLAIN = st.text(alphabet="abcXYZ019._-", min_size=1, max_size=12)
FREE = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00\r\n",
                                      exclude_categories=("Cs", "Cc")), max_size=16)


def _double(value: str) -> str:
    return '"' + "".join("\\" + c if c in '"\\$`' else c for c in value) + '"'


@st.composite
def documented_files(draw: st.DrawFn) -> tuple[str, dict[str, str]]:
    """Files written by os-release(5)'s rules, and the values they assign."""
    lines: list[str] = []
    expect: dict[str, str] = {}
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["plain", "double", "single", "comment", "blank"]))
        if kind == "comment":
            lines.append(draw(st.sampled_from(["#", "  #", "\t# "])) + draw(
                st.text(alphabet="ab =\"'$", max_size=10)))
            continue
        if kind == "blank":
            lines.append(draw(st.sampled_from(["", "  ", "\t"])))
            continue
        key = draw(st.sampled_from(KEYS))
        if kind == "plain":
            value = draw(PLAIN)
            text = value
        elif kind == "double":
            value = draw(FREE)
            text = _double(value)
        else:
            value = draw(FREE.filter(lambda v: "'" not in v))
            text = f"'{value}'"
        lines.append(f"{key}={text}")
        expect[key] = value
    return "".join(line + "\n" for line in lines), expect


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documented_files())
def test_documented_files_agree_with_the_shell_and_systemd(case: tuple[str, dict[str, str]]
                                                          ) -> None:
    text, expect = case
    data = text.encode()
    got = ours(data)
    assert got == expect == systemd_pairs(data)
    assert shell_values(data, KEYS) == expect
    # the CRLF twin: systemd reads it as the file (the shell does not: see the module's note)
    crlf = text.replace("\n", "\r\n").encode()
    assert ours(crlf) == expect == systemd_pairs(crlf)
