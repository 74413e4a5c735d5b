"""dpkg itself, asked in batches: one shell per batch runs `dpkg --compare-versions` once per
question, and one `dpkg-query --admindir` reads an assembled status file.

A missing dpkg or dpkg-query fails the test that asks (pytest.fail), it never skips: these tests
exist to hold our readers to the tool, and without the tool they prove nothing.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

# one question per NUL-separated triple on stdin (op, a, b); one answer line per question:
# the exit status and whether dpkg said anything on stderr (a warning or an error)
_COMPARE_LOOP = r"""
err=$(mktemp)
trap 'rm -f "$err"' EXIT
while IFS= read -r -d '' op && IFS= read -r -d '' a && IFS= read -r -d '' b; do
    "$DPKG" --compare-versions "$a" "$op" "$b" 2>"$err"
    rc=$?
    if [ -s "$err" ]; then said=1; else said=0; fi
    printf '%s %s\n' "$rc" "$said"
done
"""


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not on the PATH: the dpkg oracle tests need dpkg itself "
                    "(Debian/Ubuntu's dpkg package)")
    return path


def dpkg_version() -> str:
    out = subprocess.run([tool("dpkg"), "--version"], capture_output=True, text=True,
                         check=True).stdout
    return out.splitlines()[0]


def as_argument(version: str) -> str:
    """dpkg's option parser takes an argument that starts with `-` for an option, and there is
    no `--`; dpkg drops the blanks around a version before it reads it, so a leading space asks
    dpkg about the same version."""
    return " " + version if version.startswith("-") else version


@dataclass(frozen=True)
class Answer:
    status: int  # 0: the relation holds, 1: it does not, 2: an error
    said: bool  # dpkg printed a warning or an error

    @property
    def clean(self) -> bool:
        """dpkg read both versions without a word."""
        return self.status in (0, 1) and not self.said


def compare_batch(questions: list[tuple[str, str, str]]) -> list[Answer]:
    """`dpkg --compare-versions a op b` for each (op, a, b), in one shell."""
    for op, a, b in questions:
        assert "\0" not in op + a + b, "an argument cannot hold NUL"
    payload = "".join(f"{op}\0{as_argument(a)}\0{as_argument(b)}\0" for op, a, b in questions)
    done = subprocess.run(
        ["bash", "-c", _COMPARE_LOOP], input=payload.encode("utf-8", "surrogateescape"),
        capture_output=True, env={"DPKG": tool("dpkg"), "PATH": "/usr/bin:/bin", "LC_ALL": "C"},
        timeout=600, check=True,
    )
    lines = done.stdout.decode().splitlines()
    assert len(lines) == len(questions), done.stderr.decode(errors="replace")[-2000:]
    answers = []
    for line in lines:
        rc, said = line.split()
        answers.append(Answer(int(rc), said == "1"))
    return answers


@dataclass(frozen=True)
class QueryResult:
    returncode: int
    rows: tuple[tuple[str, str, str], ...]  # (binary:Package, Version, db:Status-Abbrev)
    errors: str  # the `error:` lines of stderr, warnings left out

    @property
    def refused(self) -> bool:
        return self.returncode != 0


def query_status(tmp: Path, status: bytes) -> QueryResult:
    """dpkg-query's own reading of a status file: an admindir holding only `status` (all that
    dpkg-query -W needs; it creates nothing there)."""
    admindir = tmp / "admindir"
    admindir.mkdir(exist_ok=True)
    (admindir / "status").write_bytes(status)
    done = subprocess.run(
        [tool("dpkg-query"), "--admindir", str(admindir), "-W",
         "-f", "${binary:Package}\\t${Version}\\t${db:Status-Abbrev}\\n"],
        capture_output=True, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"}, timeout=120,
    )
    rows = []
    if done.returncode == 0:
        for line in done.stdout.decode("utf-8", "surrogateescape").split("\n"):
            if line:
                name, version, abbrev = line.split("\t")
                rows.append((name, version, abbrev))
    stderr = done.stderr.decode("utf-8", "replace")
    # an error's reason is on the line after its "error: parsing file ..." line
    lines = stderr.splitlines()
    errors = "\n".join(" ".join(lines[i:i + 2]) for i, line in enumerate(lines)
                       if "error" in line)
    return QueryResult(done.returncode, tuple(rows), errors)
