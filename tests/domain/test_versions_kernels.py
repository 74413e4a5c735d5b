from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magicstick_host.domain.kernels import is_newer_kernel, is_suitable_kernel, kernel_numbers
from magicstick_host.domain.versions import compare_versions, is_valid_version, parse_version

TARGET = "7.0.0-31-generic"


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("7.0.0-31.31~24.04.1", "7.0.0-31.31", -1),
        ("6.17.0-14.14~24.04.1", "7.0.0-31.31~24.04.1", -1),
        ("7.0.0-31.31", "7.0.0-31.31", 0),
        ("7.0.0-31.31~24.04.2", "7.0.0-31.31~24.04.1", 1),
        ("7.0.0-32.32", "7.0.0-31.31", 1),
        ("1.0~rc1", "1.0", -1),
        ("1.0", "1.0+b1", -1),
        ("1:0.1", "9.9", 1),
        ("1.0a", "1.0", 1),
        ("1.0-1", "1.0-1ubuntu1", -1),
        ("6.8.0-45.45", "6.8.0-100.100", -1),
        ("1.0~~", "1.0~", -1),
        ("1.10", "1.9", 1),
        ("0:1.0", "1.0", 0),
    ],
)
def test_known_debian_orderings(a: str, b: str, expected: int) -> None:
    assert compare_versions(a, b) == expected
    assert compare_versions(b, a) == -expected


@pytest.mark.parametrize("bad", ["", "a1.0", "x:1.0", "1.0-", "1.0-a b", "*", "latest", "1 .0"])
def test_invalid_versions_are_refused(bad: str) -> None:
    assert not is_valid_version(bad)
    with pytest.raises(ValueError):
        parse_version(bad)


_part = st.text(alphabet="0123456789.+~abz", min_size=0, max_size=6)
versions = st.builds(
    lambda epoch, up, rev: f"{epoch}{up}{rev}",
    st.sampled_from(["", "1:", "2:"]),
    st.builds(lambda d, rest: d + rest, st.sampled_from("0123456789"), _part),
    st.one_of(st.just(""), st.builds(lambda r: "-" + r, st.text("0123456789.+~ab", min_size=1))),
)


@given(versions, versions)
def test_antisymmetry(a: str, b: str) -> None:
    assert compare_versions(a, b) == -compare_versions(b, a)


@given(versions)
def test_reflexive(a: str) -> None:
    assert compare_versions(a, a) == 0


@given(st.lists(versions, min_size=3, max_size=3))
def test_transitive_on_samples(vs: list[str]) -> None:
    a, b, c = vs
    if compare_versions(a, b) <= 0 and compare_versions(b, c) <= 0:
        assert compare_versions(a, c) <= 0


@given(versions)
def test_tilde_sorts_before_release(a: str) -> None:
    if "-" not in a:
        assert compare_versions(a + "~1", a) == -1


@pytest.mark.parametrize(
    ("release", "suitable"),
    [
        (TARGET, True),
        ("7.0.0-40-generic", True),
        ("6.18.4", True),
        ("6.18.4-arch1-1", True),
        ("6.19.0-3-generic", True),
        ("7.1.0-1-generic", True),
        ("6.18.3", False),
        ("6.18.0-5-generic", False),
        ("6.8.0-45-generic", False),
        ("6.14.0-37-generic", False),
        ("6.17.0-14-generic", False),
        ("6.14.0-1018-oem", True),
        ("6.14.0-1020-oem", True),
        ("6.14.0-1017-oem", False),
        ("6.11.0-1030-oem", False),
        ("", False),
        ("garbage", False),
        ("v7.0", False),
        ("7", False),
    ],
)
def test_suitable_kernel(release: str, suitable: bool) -> None:
    assert is_suitable_kernel(release, TARGET) is suitable


def test_target_kernel_always_counts() -> None:
    assert is_suitable_kernel("6.8.0-99-custom", "6.8.0-99-custom")
    assert not is_suitable_kernel(None, TARGET)


def test_kernel_numbers_and_newer() -> None:
    assert kernel_numbers("7.0.0-31-generic") == (7, 0, 0)
    assert kernel_numbers("7.0") == (7, 0, 0)
    assert is_newer_kernel("7.0.0-32-generic", TARGET)
    assert not is_newer_kernel(TARGET, TARGET)
    assert not is_newer_kernel("7.0.0-31-lowlatency", TARGET)
    assert not is_newer_kernel("6.17.0-14-generic", TARGET)
    assert not is_newer_kernel("garbage", TARGET)
