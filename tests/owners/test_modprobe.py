"""modprobe.d held to its owner: kmod's `modprobe -C DIR ... --showconfig`.

For generated host roots (the five modprobe.d directories kmod searches, files of the same
name in several of them, `.conf` and other names, backslash continuations, comments, blank and
odd lines, dashes in module and parameter names, blacklist/install/softdep), what our reader
finds must be what kmod's configuration holds:
- parse_modprobe over the files the collector picks (collect/ttm.py: `.conf` only, the first
  directory wins for a name, sorted by name) gives the `options` lines showconfig prints, in
  its order, and the same blacklist and install lines;
- the collector's TTM overrides (`_modprobe_overrides`) are exactly showconfig's options and
  install lines that size TTM/GTT.
`-C` is given once per directory, in kmod's search order (it then reads only those). kmod also
adds the `module.param=` options of the running kernel's /proc/cmdline: the lines an empty
configuration shows are subtracted. `--showconfig` needs no /lib/modules (`-S` and `-d` keep it
from looking at the running kernel's). No module is loaded.

Divergences kept:
- a line with a command and no module (`options`, `blacklist`): kmod ignores the line, our
  parser refuses the file (the evidence is unknown: a file we cannot vouch for);
- the splitting of an options string into parameters is the kernel's (parse_args, at module
  load), not kmod's: both sides are split with our splitter, so this test holds the lines,
  their joining, comments, order and override rules to kmod, not the quoting inside a value.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections import Counter
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magicstick_host.collect.reader import Reader
from magicstick_host.collect.ttm import MODPROBE_DIRS, _modprobe_overrides
from magicstick_host.domain.parsers import ParseError
from magicstick_host.domain.parsers.modprobe import (
    _split_params,
    is_memory_override,
    parse_modprobe,
)
from magicstick_host.domain.parsers.ttm_params import normalize_name
from magicstick_host.ports.hostfs import RootedHostFS

pytestmark = pytest.mark.real_commands


def modprobe() -> str:
    found = shutil.which("modprobe") or next(
        (p for p in ("/usr/sbin/modprobe", "/sbin/modprobe") if Path(p).exists()), None)
    assert found, "kmod's modprobe is required: apt-get install -y --no-install-recommends kmod"
    return found


def showconfig(root: Path) -> list[str]:
    argv = [modprobe(), "-d", str(root / "no-modules"), "-S", "0.0.0-oracle"]
    for directory in MODPROBE_DIRS:
        argv += ["-C", str(root / directory.lstrip("/"))]
    proc = subprocess.run([*argv, "--showconfig"], capture_output=True, text=True, timeout=30,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    body = proc.stdout.split("\n# End of configuration files.")[0]
    return [line for line in body.split("\n") if line]


@cache
def baseline() -> Counter[str]:
    """What kmod shows for an empty configuration: the running kernel's command line."""
    with tempfile.TemporaryDirectory() as tmp:
        return Counter(showconfig(Path(tmp)))


def kmod_lines(root: Path) -> list[str]:
    extra = Counter(baseline())
    out = []
    for line in showconfig(root):
        if extra[line]:
            extra[line] -= 1
            continue
        out.append(line)
    return out


def options_of(line: str) -> tuple[str, tuple[tuple[str, str | None], ...]]:
    _, module, *rest = line.split(" ", 2)
    params = []
    for word in _split_params(rest[0] if rest else ""):
        key, sep, value = word.partition("=")
        params.append((normalize_name(key), value.strip('"') if sep else None))
    return normalize_name(module), tuple(params)


def our_files(root: Path) -> list[Path]:
    chosen: dict[str, Path] = {}
    for directory in MODPROBE_DIRS:
        path = root / directory.lstrip("/")
        for child in sorted(path.iterdir()) if path.is_dir() else ():
            if child.name.endswith(".conf"):
                chosen.setdefault(child.name, child)
    return [chosen[name] for name in sorted(chosen)]


def compare(root: Path) -> None:
    theirs = kmod_lines(root)
    commands = []
    for path in our_files(root):
        try:
            commands += parse_modprobe(path.read_text())
        except ParseError:
            # kept (see the module's note): only for a command without a module
            assert any(len(line.split()) == 1 and not line.lstrip().startswith("#")
                       for line in _logical(path.read_text())), path
            return
    ours_options = [(c.module, c.params) for c in commands if c.command == "options"]
    assert ours_options == [options_of(line) for line in theirs if line.startswith("options ")]
    assert [c.module for c in commands if c.command == "blacklist"] == [
        normalize_name(line.split()[1]) for line in theirs if line.startswith("blacklist ")]
    assert sorted(install_key(c.text) for c in commands if c.command == "install") == sorted(
        install_key(line) for line in theirs if line.startswith("install "))
    # the product's reader: the TTM overrides are kmod's lines that size TTM/GTT
    found = _modprobe_overrides(Reader(RootedHostFS(str(root))))
    kmod_memory = [line for line in theirs if line.startswith(("options ", "install "))
                   and any(is_memory_override(c) for c in parse_modprobe(line))]
    # an override's text is the line whitespace-collapsed (what the report shows)
    assert sorted(options_key(o.text) for o in found) == sorted(
        options_key(" ".join(line.split())) for line in kmod_memory)


def options_key(text: str) -> str:
    (command,) = parse_modprobe(text)
    return repr((command.command, command.module, command.params))


def install_key(text: str) -> tuple[str, str]:
    """(module, command line) of an install line, the module as kmod names it."""
    _, module, rest = text.split(None, 2)
    return normalize_name(module), " ".join(rest.split())


def _logical(text: str) -> list[str]:
    from magicstick_host.domain.parsers.modprobe import logical_lines

    return logical_lines(text)


def write(root: Path, files: dict[tuple[str, str], str]) -> None:
    for (directory, name), text in files.items():
        path = root / directory.lstrip("/") / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


# -- examples ------------------------------------------------------------------------------

STRIX_TTM = "options ttm pages_limit=27648000 page_pool_size=27648000\n"


def test_override_rules_continuations_and_comments(tmp_path: Path) -> None:
    write(tmp_path, {
        ("/etc/modprobe.d", "99-magicstick-gpu-memory.conf"): STRIX_TTM,
        ("/lib/modprobe.d", "99-magicstick-gpu-memory.conf"): "options ttm pages_limit=1\n",
        ("/usr/lib/modprobe.d", "50-amd.conf"):
            "# comment \\\noptions amdttm pages_limit=2\noptions amd-ttm pages-limit=3 \\\n"
            "   page_pool_size=4\nblacklist radeon\ninstall amdgpu /sbin/modprobe "
            "--ignore-install amdgpu gttsize=4096\nsoftdep amdgpu pre: ttm\n",
        ("/run/modprobe.d", "10-x.conf.disabled"): "options ttm pages_limit=5\n",
        ("/usr/local/lib/modprobe.d", "00-first.conf"): '\toptions amdgpu "gttsize=1"\n',
    })
    compare(tmp_path)
    overrides = _modprobe_overrides(Reader(RootedHostFS(str(tmp_path))))
    texts = [o.text for o in overrides]
    assert not any("pages_limit=1" in t for t in texts)  # shadowed by /etc's file of that name
    assert any("pages-limit=3" in t for t in texts)


def test_the_machines_own_configuration_reads_as_kmod(tmp_path: Path) -> None:
    """The modprobe.d files of this machine (if any) copied into a root."""
    for directory in MODPROBE_DIRS:
        if Path(directory).is_dir():
            shutil.copytree(directory, tmp_path / directory.lstrip("/"), symlinks=False,
                            dirs_exist_ok=True, ignore_dangling_symlinks=True)
    compare(tmp_path)


# -- generated roots -------------------------------------------------------------------------

MODULES = ["ttm", "amdttm", "amd_ttm", "amd-ttm", "amdgpu", "radeon", "snd-hda"]
PARAMS = ["pages_limit", "page_pool_size", "pages-limit", "gttsize", "debug", 'x="a b"']
VALUES = ["", "=1", "=27648000", "=-1", '="q v"', "=x"]
BLANK = st.sampled_from(["", " ", "  ", "\t"])


@st.composite
def lines(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["options", "options", "blacklist", "install", "softdep",
                                 "comment", "blank", "alias"]))
    lead = draw(BLANK)
    if kind == "comment":
        return lead + "#" + draw(st.sampled_from([" options ttm pages_limit=9", "", " x"]))
    if kind == "blank":
        return lead
    module = draw(st.sampled_from(MODULES))
    if kind == "options":
        words = [draw(st.sampled_from(PARAMS)) + draw(st.sampled_from(VALUES))
                 for _ in range(draw(st.integers(1, 3)))]
        body = draw(BLANK).join(words) if draw(st.booleans()) else " ".join(words)
        return f"{lead}options {module} {body}"
    if kind == "install":
        return f"{lead}install {module} /bin/true " + draw(st.sampled_from(
            ["", "pages_limit=5", "gttsize=1"]))
    if kind == "softdep":
        return f"{lead}softdep {module} pre: ttm"
    if kind == "alias":
        return f"{lead}alias pci:v00001002* {module}"
    return f"{lead}blacklist {module}"


@st.composite
def files(draw: st.DrawFn) -> str:
    out = []
    for line in draw(st.lists(lines(), max_size=6)):
        # a continuation splits a line at a blank (kmod joins it back without the backslash)
        if " " in line.strip() and draw(st.booleans()):
            at = line.rindex(" ")
            line = line[:at] + " \\\n" + draw(BLANK) + line[at + 1:]
        out.append(line)
    return "\n".join(out) + draw(st.sampled_from(["\n", "", "\\\n"]))


ROOTS = st.dictionaries(
    st.tuples(st.sampled_from(MODPROBE_DIRS),
              st.sampled_from(["10-a.conf", "50-b.conf", "99-z.conf", "a.conf", "x.txt"])),
    files(), max_size=5)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ROOTS)
def test_generated_roots_read_as_kmod(root_files: dict[tuple[str, str], str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        write(Path(tmp), root_files)
        compare(Path(tmp))
