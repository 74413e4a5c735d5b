"""os-release, meminfo, version_signature, KFD properties, scheduled shutdown, cgroup."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magicstick_host.domain.evidence import ScheduledShutdown
from magicstick_host.domain.parsers import ParseError
from magicstick_host.domain.parsers.cgroup import parse_cgroup_v2_path, parse_memory_max
from magicstick_host.domain.parsers.kfd import parse_kfd_properties
from magicstick_host.domain.parsers.meminfo import parse_mem_total_kib
from magicstick_host.domain.parsers.os_release import parse_os_release
from magicstick_host.domain.parsers.shutdown import parse_scheduled_shutdown
from magicstick_host.domain.parsers.version_signature import parse_version_signature
from tests.parsers.strategies import garbage, ident, words

PARSERS: list[Callable[[str], object]] = [
    parse_os_release,
    parse_mem_total_kib,
    parse_version_signature,
    parse_kfd_properties,
    parse_scheduled_shutdown,
    parse_cgroup_v2_path,
    parse_memory_max,
]


@pytest.mark.parametrize("parser", PARSERS)
@given(text=garbage)
def test_garbage_only_raises_parse_error(parser: Callable[[str], object], text: str) -> None:
    with contextlib.suppress(ParseError):
        parser(text)


# --- os-release

os_key = st.from_regex(r"[A-Z_][A-Z0-9_]{0,15}", fullmatch=True)
os_value = st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc"]), max_size=30)


def _render_dq(value: str) -> str:
    escaped = "".join("\\" + c if c in '"\\$`' else c for c in value)
    return f'"{escaped}"'


@given(values=st.dictionaries(os_key, os_value, max_size=8), style=st.sampled_from("dsu"))
def test_os_release_round_trip(values: dict[str, str], style: str) -> None:
    lines = ["# comment", ""]
    for key, value in values.items():
        plain = value and not any(c in value for c in " \t\"'\\$`#")
        if style == "u" and plain:
            lines.append(f"{key}={value}")
        elif style == "s" and "'" not in value:
            lines.append(f"{key}='{value}'")
        else:
            lines.append(f"{key}={_render_dq(value)}")
    assert parse_os_release("\n".join(lines) + "\n") == values


def test_os_release_example() -> None:
    text = ('PRETTY_NAME="Ubuntu Resolute Raccoon"\nNAME="Ubuntu"\nVERSION_ID="26.04"\n'
            "VERSION_CODENAME=resolute\nID=ubuntu\nID_LIKE=debian\n")
    values = parse_os_release(text)
    assert values["VERSION_ID"] == "26.04"
    assert values["VERSION_CODENAME"] == "resolute"
    assert values["PRETTY_NAME"] == "Ubuntu Resolute Raccoon"


@pytest.mark.parametrize(("text", "values"), [
    ('ID="ubuntu\n', {"ID": "ubuntu\n"}),  # an unterminated quote runs to the end
    ("just words\n", {}),  # a line without `=` is ignored
    ("ID=a b  \n", {"ID": "a b"}),
    ('ID="a"b\n', {"ID": "ab"}),
    ("ID=ubuntu\r\nVERSION_ID='24.04'\r\n", {"ID": "ubuntu", "VERSION_ID": "24.04"}),
])
def test_os_release_reads_what_systemd_reads(text: str, values: dict[str, str]) -> None:
    """systemd's reading, not the shell's (tests/owners/test_os_release.py holds it to
    systemd's own parser)."""
    assert parse_os_release(text) == values


@pytest.mark.parametrize("text", ["ID=ubuntu\x00\n", "ID=\udc80\n"])
def test_os_release_rejects(text: str) -> None:
    with pytest.raises(ParseError):
        parse_os_release(text)


# --- meminfo


@given(kib=st.integers(min_value=1, max_value=2**50), pad=st.integers(min_value=1, max_value=12))
def test_meminfo_round_trip(kib: int, pad: int) -> None:
    text = f"MemTotal:{' ' * pad}{kib} kB\nMemFree:        1000 kB\nHugePages_Total:       0\n"
    assert parse_mem_total_kib(text) == kib


def test_meminfo_example_and_rejects() -> None:
    assert parse_mem_total_kib("MemTotal:       131023872 kB\n") == 131023872
    for bad in ("MemFree: 1 kB\n", "MemTotal: 12 MB\n", "MemTotal: 1 kB\nMemTotal: 1 kB\n",
                "MemTotal: 0 kB\n"):
        with pytest.raises(ParseError):
            parse_mem_total_kib(bad)


# --- version_signature

num = st.integers(min_value=0, max_value=999)


@given(
    abi=st.tuples(num, num, num, num),
    upload=num,
    suffix=st.sampled_from(["", "~24.04.1", "~22.04.2", "+1"]),
    flavour=st.sampled_from(["generic", "generic-64k", "lowlatency", "oem", "nvidia"]),
    upstream=st.tuples(num, num, num),
)
def test_version_signature_round_trip(
    abi: tuple[int, ...], upload: int, suffix: str, flavour: str, upstream: tuple[int, ...]
) -> None:
    abi_s = "{}.{}.{}-{}".format(*abi)
    package = f"{abi_s}.{upload}{suffix}"
    up = "{}.{}.{}".format(*upstream)
    sig = parse_version_signature(f"Ubuntu {package}-{flavour} {up}\n")
    assert (sig.package_version, sig.flavour, sig.upstream_version) == (package, flavour, up)
    assert sig.release == f"{abi_s}-{flavour}"


def test_version_signature_examples() -> None:
    sig = parse_version_signature("Ubuntu 7.0.0-31.31-generic 7.0.4\n")
    assert (sig.package_version, sig.flavour, sig.upstream_version) == (
        "7.0.0-31.31", "generic", "7.0.4")
    assert sig.release == "7.0.0-31-generic"
    hwe = parse_version_signature("Ubuntu 7.0.0-31.31~24.04.1-generic 7.0.4\n")
    assert hwe.package_version == "7.0.0-31.31~24.04.1"
    assert hwe.release == "7.0.0-31-generic"
    for bad in ("Ubuntu 7.0.0-31-generic 7.0.4", "7.0.0-31.31-generic 7.0.4", ""):
        with pytest.raises(ParseError):
            parse_version_signature(bad)


# --- KFD properties


@given(props=st.dictionaries(ident, st.integers(min_value=0, max_value=2**64 - 1), min_size=1))
def test_kfd_round_trip(props: dict[str, int]) -> None:
    text = "".join(f"{k} {v}\n" for k, v in props.items())
    assert parse_kfd_properties(text).values == props


def test_kfd_example() -> None:
    text = ("cpu_cores_count 0\nsimd_count 80\ngfx_target_version 110501\n"
            "drm_render_minor 128\nunique_id 1234\n")
    props = parse_kfd_properties(text)
    assert props.gfx_target_version == 110501
    assert props.drm_render_minor == 128
    assert parse_kfd_properties("cpu_cores_count 32\n").gfx_target_version is None


# --- scheduled shutdown


@given(usec=st.integers(min_value=0, max_value=2**63), mode=st.sampled_from(
    ["reboot", "poweroff", "halt", "kexec"]), uid=st.none() | st.integers(0, 65535))
def test_shutdown_round_trip(usec: int, mode: str, uid: int | None) -> None:
    text = f"USEC={usec}\nWARN_WALL=1\nMODE={mode}\n" + (f"UID={uid}\n" if uid is not None else "")
    assert parse_scheduled_shutdown(text) == ScheduledShutdown(mode=mode, usec=usec)


def test_shutdown_rejects() -> None:
    for bad in ("MODE=reboot\n", "USEC=x\nMODE=reboot\n", "USEC=1\nMODE=reboot\njunk\n", ""):
        with pytest.raises(ParseError):
            parse_scheduled_shutdown(bad)


# --- cgroup

segment = words("abcdefghijklmnopqrstuvwxyz0123456789-_.@", 1, 20).filter(
    lambda s: s not in (".", ".."))


@given(parts=st.lists(segment, max_size=5), hybrid=st.booleans())
def test_cgroup_round_trip(parts: list[str], hybrid: bool) -> None:
    path = "/" + "/".join(parts)
    text = ("12:memory:/user.slice\n1:name=systemd:/x\n" if hybrid else "") + f"0::{path}\n"
    assert parse_cgroup_v2_path(text) == path


def test_cgroup_examples() -> None:
    path = parse_cgroup_v2_path("0::/system.slice/magicstick-host-management.service\n")
    assert path == "/system.slice/magicstick-host-management.service"
    with pytest.raises(ParseError):
        parse_cgroup_v2_path("12:memory:/user.slice\n")


@given(value=st.none() | st.integers(min_value=0, max_value=2**63))
def test_memory_max_round_trip(value: int | None) -> None:
    assert parse_memory_max("max\n" if value is None else f"{value}\n") == value
