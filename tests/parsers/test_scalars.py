"""Single-value files: integers, PCI hex attributes, identity lines."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magicstick_host.domain.parsers import ParseError
from magicstick_host.domain.parsers.common import parse_int, parse_uint
from magicstick_host.domain.parsers.identity import (
    parse_arch,
    parse_boot_id,
    parse_cpu_model,
    parse_dmi_line,
    parse_kernel_release,
    parse_nvidia_module_version,
    parse_nvrm_version,
)
from magicstick_host.domain.parsers.pci import (
    is_pci_address,
    parse_pci_class,
    parse_pci_id,
    parse_pci_revision,
)
from tests.parsers.strategies import garbage, lower_hex, words

ALL = [
    lambda t: parse_uint(t, "x"),
    lambda t: parse_int(t, "x"),
    parse_boot_id,
    parse_kernel_release,
    parse_arch,
    parse_nvidia_module_version,
    parse_nvrm_version,
    parse_cpu_model,
    lambda t: parse_dmi_line(t, "x"),
    parse_pci_id,
    parse_pci_class,
    parse_pci_revision,
]


@pytest.mark.parametrize("parser", ALL)
@given(text=garbage)
def test_garbage_only_raises_parse_error(parser: object, text: str) -> None:
    with contextlib.suppress(ParseError):
        parser(text)  # type: ignore[operator]


@given(n=st.integers(min_value=0, max_value=2**64), newline=st.booleans())
def test_uint_round_trip(n: int, newline: bool) -> None:
    assert parse_uint(f"{n}\n" if newline else str(n), "x") == n


@given(n=st.integers(min_value=-(2**63), max_value=2**63))
def test_int_round_trip(n: int) -> None:
    assert parse_int(f"{n}\n", "x") == n


@pytest.mark.parametrize("text", ["", "\n", " 1", "1 ", "+1", "0x10", "1\n\n", "١"])
def test_uint_rejects(text: str) -> None:
    with pytest.raises(ParseError):
        parse_uint(text, "x")


@given(value=st.integers(min_value=0, max_value=0xFFFF), upper=st.booleans())
def test_pci_id_round_trip(value: int, upper: bool) -> None:
    text = f"0x{value:04X}\n" if upper else f"0x{value:04x}\n"
    assert parse_pci_id(text) == f"{value:04x}"


@given(value=st.integers(min_value=0, max_value=0xFFFFFF))
def test_pci_class_round_trip(value: int) -> None:
    assert parse_pci_class(f"0x{value:06x}\n") == f"{value:06x}"


@given(value=st.integers(min_value=0, max_value=0xFF))
def test_pci_revision_round_trip(value: int) -> None:
    assert parse_pci_revision(f"0x{value:02x}\n") == f"{value:02x}"


def test_pci_examples() -> None:
    assert parse_pci_id("0x1002\n") == "1002"
    assert parse_pci_id("0x10de\n") == "10de"
    assert parse_pci_class("0x038000\n") == "038000"
    assert parse_pci_revision("0xc1\n") == "c1"
    assert is_pci_address("0000:c5:00.0")
    assert not is_pci_address("0000:c5:00.8")
    assert not is_pci_address("card0")


@pytest.mark.parametrize("text", ["1002\n", "0x102\n", "0x10022\n", "0x1g02\n", "0x1002 \n",
                                  " 0x1002", "0x1002\n0x1002\n", ""])
def test_pci_id_rejects(text: str) -> None:
    with pytest.raises(ParseError):
        parse_pci_id(text)


@given(parts=st.tuples(*(words(lower_hex, n, n) for n in (8, 4, 4, 4, 12))))
def test_boot_id_round_trip(parts: tuple[str, ...]) -> None:
    boot_id = "-".join(parts)
    assert parse_boot_id(boot_id + "\n") == boot_id


def test_boot_id_rejects_uppercase() -> None:
    with pytest.raises(ParseError):
        parse_boot_id("6F1C3B2A-0D4E-4B8A-9C7D-1E2F3A4B5C6D\n")


def test_kernel_release_and_arch_examples() -> None:
    assert parse_kernel_release("7.0.0-31-generic\n") == "7.0.0-31-generic"
    assert parse_arch("x86_64\n") == "x86_64"
    with pytest.raises(ParseError):
        parse_kernel_release("7.0.0 31\n")


@given(version=st.from_regex(r"[0-9]{1,4}\.[0-9]{1,3}(\.[0-9]{1,3})?", fullmatch=True))
def test_nvidia_versions_round_trip(version: str) -> None:
    assert parse_nvidia_module_version(version + "\n") == version
    proc = (f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {version}  Release "
            "Build  (dvs-builder@U16-A24-23-4)  Thu Sep 18 2025\nGCC version:  gcc 13.3.0\n")
    assert parse_nvrm_version(proc) == version


def test_nvrm_example() -> None:
    text = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Tue Sep 23 09:55:41 UTC"
            " 2025\nGCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n")
    assert parse_nvrm_version(text) == "580.95.05"


@given(model=st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E),
                     min_size=1, max_size=60))
def test_cpu_model_round_trip(model: str) -> None:
    text = f"processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: {model}\nflags\t: x\n"
    assert parse_cpu_model(text + text.replace(model, "other")) == model


def test_cpu_model_example() -> None:
    text = "processor\t: 0\nmodel name\t: AMD RYZEN AI MAX+ 395 w/ Radeon 8060S\n"
    assert parse_cpu_model(text) == "AMD RYZEN AI MAX+ 395 w/ Radeon 8060S"
    with pytest.raises(ParseError):
        parse_cpu_model("processor\t: 0\n")


@given(value=st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E),
                     min_size=1, max_size=60))
def test_dmi_round_trip(value: str) -> None:
    assert parse_dmi_line(value + "\n", "sys_vendor") == value
