"""dpkg status, carve-out options, modprobe.d, kernel command line, /etc/default/grub."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from magicstick_host.domain.evidence import CarveoutOption
from magicstick_host.domain.parsers import ParseError
from magicstick_host.domain.parsers.carveout import (
    parse_carveout_index,
    parse_carveout_options,
    render_carveout_options,
    size_text,
)
from magicstick_host.domain.parsers.cmdline import memory_overrides, split_cmdline
from magicstick_host.domain.parsers.dpkg_status import installed_versions, parse_dpkg_status
from magicstick_host.domain.parsers.grub import grub_cmdlines
from magicstick_host.domain.parsers.modprobe import (
    is_memory_override,
    parse_modprobe,
    ttm_settings,
)
from tests.parsers.strategies import garbage, ident, words

PARSERS: list[Callable[[str], object]] = [
    parse_dpkg_status,
    parse_carveout_options,
    parse_carveout_index,
    parse_modprobe,
    split_cmdline,
    grub_cmdlines,
]


@pytest.mark.parametrize("parser", PARSERS)
@given(text=garbage)
def test_garbage_only_raises_parse_error(parser: Callable[[str], object], text: str) -> None:
    with contextlib.suppress(ParseError):
        parser(text)


# --- dpkg status

pkg_name = st.from_regex(r"[a-z0-9][a-z0-9+.-]{1,20}", fullmatch=True)
version = st.from_regex(r"[0-9]{1,2}\.[0-9]{1,2}\.[0-9]-[0-9]{1,2}\.[0-9]{1,2}(~24\.04\.[0-9])?",
                        fullmatch=True)
status = st.sampled_from(["install ok installed", "hold ok installed", "deinstall ok config-files",
                          "install ok half-installed", "purge ok not-installed"])


@given(packages=st.dictionaries(pkg_name, st.tuples(version, status), max_size=8))
def test_dpkg_round_trip(packages: dict[str, tuple[str, str]]) -> None:
    stanzas = []
    for name, (ver, stat) in packages.items():
        stanzas.append(
            f"Package: {name}\nStatus: {stat}\nPriority: optional\nArchitecture: amd64\n"
            f"Version: {ver}\nDescription: a package\n multi-line text\n .\n more\n"
        )
    parsed = parse_dpkg_status("\n".join(stanzas))
    expected = {n: (v,) for n, (v, s) in packages.items() if s.endswith("ok installed")}
    assert installed_versions(parsed) == expected


def test_dpkg_example() -> None:
    text = (
        "Package: linux-generic\nStatus: install ok installed\nVersion: 7.0.0-31.31\n\n"
        "Package: linux-image-7.0.0-31-generic\nStatus: install ok installed\n"
        "Conffiles:\n /etc/x 0123\nVersion: 7.0.0-31.31\n\n"
        "Package: old\nStatus: deinstall ok config-files\nVersion: 1\n\n"
        "Package: removed\nStatus: purge ok not-installed\n"
    )
    assert installed_versions(parse_dpkg_status(text)) == {
        "linux-generic": ("7.0.0-31.31",),
        "linux-image-7.0.0-31-generic": ("7.0.0-31.31",),
    }


# the field line as dpkg reads it (lib/dpkg/parse.c; held to dpkg-query in
# tests/owners/test_dpkg_status.py): the name runs to the first white space or colon, does not
# start with a hyphen, and blanks may stand before the colon
DPKG_FIELD = re.compile(r"([^\s:-][^\s:]*)[ \t\v\f\r]*:(.*)", re.ASCII)
line_chars = st.text(alphabet=st.sampled_from(list("Ab-9:;~ \t\r\x0b\x7f\u00e9\u2028!")),
                     min_size=1, max_size=10)


@given(line=line_chars)
def test_dpkg_field_lines_are_read_as_dpkg_reads_them(line: str) -> None:
    """Any line (not a continuation or a blank one) after a Package field: a field exactly
    when dpkg's rule matches it, with its name and value."""
    assume(line.strip() and line[0] not in " \t\r\x0b")
    expected = DPKG_FIELD.fullmatch(line)
    text = f"Package: p\n{line}\n"
    if expected is None or expected.group(1).lower() == "package":
        with pytest.raises(ParseError):
            parse_dpkg_status(text)
        return
    named = expected.group(1).lower()
    value = expected.group(2).strip(" \t\n\v\f\r")
    if named == "status":
        return  # a Status value is held to dpkg-query in tests/owners
    (stanza,) = parse_dpkg_status(text)
    assert stanza.package == "p"
    assert stanza.architecture == (value if named == "architecture" else None)


def test_a_non_ascii_field_name_is_a_field() -> None:
    """dpkg reads any non-space name (issue #25: it must not make every package unknown)."""
    text = ("Package: a\nStatus: install ok installed\nArchitecture: amd64\nVersion: 1\n"
            "Fïeld: x\n")
    assert installed_versions(parse_dpkg_status(text)) == {"a": ("1",)}


@pytest.mark.parametrize("text", [
    " continuation first\n",
    "Package: a\nnot a field\n",
    "Status: install ok installed\nVersion: 1\n",
    "Package: a\nStatus: install ok installed\n",
    "Package: a\nPackage: b\n",
    "Package: a\nStatus: install ok installed\nVersion: 1",  # no final newline
    "Package: a\nStatus: install ok installed\nVersion: 1\n \nPackage: b\n",  # ws line
    "Package: a\nStatus: install ok frobbed\nVersion: 1\n",
    "Package: a\nStatus: install ok installed\nVersion: 1\n\n"
    "Package: a\nStatus: install ok installed\nVersion: 1\n",  # one package twice
])
def test_dpkg_rejects(text: str) -> None:
    with pytest.raises(ParseError):
        parse_dpkg_status(text)


# --- carve-out

name = st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc"],
                                      blacklist_characters="\n"), max_size=12)


@st.composite
def carveout_entries(draw: st.DrawFn) -> list[tuple[int, str, int]]:
    """(index, firmware name, MiB) as the firmware lists them."""
    n = draw(st.integers(min_value=1, max_value=19))
    indexes = draw(st.lists(st.integers(0, 30), min_size=n, max_size=n, unique=True))
    sizes = draw(st.lists(st.integers(1, 131072), min_size=n, max_size=n, unique=True))
    names = draw(st.lists(name, min_size=n, max_size=n))
    return list(zip(indexes, names, sizes, strict=True))


@given(entries=carveout_entries(), newline=st.booleans())
def test_carveout_labels_are_the_firmware_text(
    entries: list[tuple[int, str, int]], newline: bool
) -> None:
    text = render_carveout_options(entries)
    parsed = parse_carveout_options(text if newline else text[:-1])
    assert parsed == tuple(
        CarveoutOption(i, f"{n} ({size_text(mi)})".strip(), mi) for i, n, mi in entries
    )
    for option, line in zip(parsed, text.splitlines(), strict=True):
        # the label is the line after `<index>: `, trimmed, and names the parsed size
        assert option.label == line.split(": ", 1)[1].strip()
        assert option.label.endswith(f"({size_text(option.size_mi)})")


@given(entries=carveout_entries())
def test_carveout_labels_keep_the_unit_the_firmware_used(
    entries: list[tuple[int, str, int]],
) -> None:
    # the kernel may print whole GiB in MB as well; the label shows what it printed
    text = "".join(f"{i}: {n} ({mi} MB)\n" for i, n, mi in entries)
    assert parse_carveout_options(text) == tuple(
        CarveoutOption(i, f"{n} ({mi} MB)".strip(), mi) for i, n, mi in entries
    )


@given(entries=carveout_entries(), pad=st.text(alphabet=" \t", min_size=1, max_size=3))
def test_carveout_labels_are_trimmed(entries: list[tuple[int, str, int]], pad: str) -> None:
    text = "".join(f"{i}: {pad}{n} ({size_text(mi)})\n" for i, n, mi in entries)
    # leading padding never reaches the label: the same label as without it
    assert parse_carveout_options(text) == tuple(
        CarveoutOption(i, f"{n} ({size_text(mi)})".strip(), mi) for i, n, mi in entries
    )


def test_carveout_example_from_host_facts() -> None:
    text = "0: Minimum (512 MB)\n1:  (1 GB)\n7: Medium (16 GB)\n9: High (32 GB)\n"
    assert parse_carveout_options(text) == (
        CarveoutOption(0, "Minimum (512 MB)", 512),
        CarveoutOption(1, "(1 GB)", 1024),
        CarveoutOption(7, "Medium (16 GB)", 16384),
        CarveoutOption(9, "High (32 GB)", 32768),
    )
    assert parse_carveout_index("7\n") == 7


@pytest.mark.parametrize(("line", "label", "size_mi"), [
    ("0: Minimum (512 MB)", "Minimum (512 MB)", 512),
    ("1:  (1 GB)", "(1 GB)", 1024),
    ("2:    (2 GB)", "(2 GB)", 2048),
    ("3: Big (disk) (1536 MB)", "Big (disk) (1536 MB)", 1536),
    ("4: Two  spaces (96 GB)", "Two  spaces (96 GB)", 98304),
])
def test_carveout_label_examples(line: str, label: str, size_mi: int) -> None:
    (option,) = parse_carveout_options(line + "\n")
    assert (option.label, option.size_mi) == (label, size_mi)


@pytest.mark.parametrize("text", [
    "", "\n", "0: Minimum (0 MB)\n", "0: A (1 GB)\n0: B (2 GB)\n", "0: A (1 GB)\n1: B (1024 MB)\n",
    "0: A (1 TB)\n", "0:A (1 GB)\n", "0: A (1 GB) \n", "x: A (1 GB)\n",
    "".join(f"{i}: o ({i + 1} GB)\n" for i in range(20)),
])
def test_carveout_rejects(text: str) -> None:
    with pytest.raises(ParseError):
        parse_carveout_options(text)


# --- modprobe.d

param = st.tuples(ident, st.none() | words("0123456789abcdefxyz,", 1, 8))


@given(module=ident, params=st.lists(param, max_size=5), split=st.booleans())
def test_modprobe_round_trip(module: str, params: list[tuple[str, str | None]],
                             split: bool) -> None:
    rendered = [k if v is None else f"{k}={v}" for k, v in params]
    body = " \\\n    ".join(rendered) if split else " ".join(rendered)
    text = f"# a comment\n\n  # indented comment\noptions {module} {body}\nblacklist foo\n"
    commands = parse_modprobe(text)
    assert commands[0].command == "options"
    assert commands[0].module == module
    assert list(commands[0].params) == params
    assert commands[1].command == "blacklist"


@given(limit=st.integers(0, 2**40), pool=st.integers(0, 2**40),
       module=st.sampled_from(["ttm", "amdttm", "amd_ttm", "amd-ttm"]))
def test_modprobe_ttm_settings_round_trip(limit: int, pool: int, module: str) -> None:
    text = (f"# managed by magicstick-host\noptions {module} pages_limit={limit} "
            f"page_pool_size={pool}\n")
    commands = parse_modprobe(text)
    assert ttm_settings(commands) == {"pages_limit": limit, "page_pool_size": pool}
    assert all(is_memory_override(c) for c in commands)


@pytest.mark.parametrize(("line", "override"), [
    ("options ttm pages_limit=1 page_pool_size=1", True),
    ("options amdttm page_pool_size=1", True),
    ("options amd-ttm pages_limit=1", True),
    ("options amdgpu gttsize=4096", True),
    ("options amdgpu gartsize=512", True),
    ("options amdgpu vramlimit=512", True),
    ("options amdgpu ppfeaturemask=0xffffffff", False),
    ("options nouveau modeset=0", False),
    ("blacklist ttm", False),
    ("install ttm /sbin/modprobe --ignore-install ttm pages_limit=5", True),
])
def test_modprobe_override_examples(line: str, override: bool) -> None:
    (command,) = parse_modprobe(line + "\n")
    assert is_memory_override(command) is override


def test_modprobe_continuation_and_comment() -> None:
    text = "options ttm \\\n  pages_limit=100 \\\n  page_pool_size=100\n# options ttm x=1\n"
    assert ttm_settings(parse_modprobe(text)) == {"pages_limit": 100, "page_pool_size": 100}
    assert ttm_settings(parse_modprobe("options ttm pages_limit=abc\n")) == {"pages_limit": None}


# --- kernel command line and grub

arg = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E,
                                     blacklist_characters='"'), min_size=1, max_size=20)


@given(args=st.lists(arg, max_size=10))
def test_cmdline_round_trip(args: list[str]) -> None:
    assert split_cmdline(" ".join(args) + "\n") == tuple(args)


def test_cmdline_quotes_and_overrides() -> None:
    args = split_cmdline('BOOT_IMAGE=/vmlinuz root=UUID=x ro "quoted arg=1 2" '
                         'ttm.pages_limit=100 amdgpu.gttsize=1 amd-ttm.page_pool_size=5 '
                         'amdgpu.ppfeaturemask=1 quiet splash\n')
    assert "quoted arg=1 2" in args
    assert memory_overrides(args) == (
        "ttm.pages_limit=100", "amdgpu.gttsize=1", "amd-ttm.page_pool_size=5")


@given(args=st.lists(arg.filter(lambda a: not any(c in a for c in "'\\$`")), max_size=8),
       default=st.booleans(), export=st.booleans())
def test_grub_round_trip(args: list[str], default: bool, export: bool) -> None:
    var = "GRUB_CMDLINE_LINUX_DEFAULT" if default else "GRUB_CMDLINE_LINUX"
    value = " ".join(args)
    text = (f"# If you change this file, run 'update-grub'\nGRUB_DEFAULT=0\n"
            f"#{var}=\"ttm.pages_limit=1\"\n{'export ' if export else ''}{var}=\"{value}\"\n")
    assert grub_cmdlines(text) == ((var, value),)


def test_grub_example() -> None:
    text = ('GRUB_CMDLINE_LINUX_DEFAULT="quiet splash ttm.pages_limit=100"\n'
            "GRUB_CMDLINE_LINUX='amdgpu.gttsize=4096'\nGRUB_CMDLINE_LINUX=$GRUB_CMDLINE_LINUX\n")
    found = grub_cmdlines(text)
    assert found[0] == ("GRUB_CMDLINE_LINUX_DEFAULT", "quiet splash ttm.pages_limit=100")
    assert found[1] == ("GRUB_CMDLINE_LINUX", "amdgpu.gttsize=4096")
    with pytest.raises(ParseError):
        grub_cmdlines('GRUB_CMDLINE_LINUX="unterminated\n')
