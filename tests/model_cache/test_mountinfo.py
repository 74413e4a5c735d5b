"""The /proc/self/mountinfo parser: real lines, escapes, and garbage that never escapes as
anything but ParseError."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magicstick_host.domain.model_cache.inventory import CACHE_ROOTS, nested_mount
from magicstick_host.domain.parsers import ParseError
from magicstick_host.domain.parsers.mountinfo import parse_mount_line, parse_mountinfo
from magicstick_host.sim.model import Host
from magicstick_host.sim.model_cache import BASE_MOUNTS, mountinfo
from tests.parsers.strategies import garbage

REAL = """\
22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro
36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
77 22 0:50 / /var/lib/kubelet/pods/x/volumes/kubernetes.io~empty-dir/a\\040b rw - tmpfs tmpfs rw
80 22 259:2 /root/.cache/huggingface/hub /root/.cache/huggingface/hub rw shared:1 - ext4 /dev/x rw
"""


def test_real_lines() -> None:
    mounts = parse_mountinfo(REAL)
    assert [m.mount_point for m in mounts] == [
        "/", "/mnt2", "/var/lib/kubelet/pods/x/volumes/kubernetes.io~empty-dir/a b",
        "/root/.cache/huggingface/hub",
    ]
    assert (mounts[1].mount_id, mounts[1].parent_id, mounts[1].major, mounts[1].minor) == (
        36, 35, 98, 0)
    assert mounts[1].root == "/mnt1" and mounts[1].fstype == "ext3"


@pytest.mark.parametrize("line", [
    "",
    "22 1 259:2 / / rw,relatime shared:1 ext4 /dev/x rw",  # no separator
    "22 1 259:2 / / rw - ext4 /dev/x",  # too few after the separator
    "x 1 259:2 / / rw - ext4 /dev/x rw",
    "22 1 2592 / / rw - ext4 /dev/x rw",
    "22 1 259:2 / relative rw - ext4 /dev/x rw",
    "22 1 259:2 / /a\\777 rw - ext4 /dev/x rw",  # not one of the kernel's escapes
    "22 1 259:2 / /a\\b rw - ext4 /dev/x rw",
    "22 1 259:2 / / rw BAD! - ext4 /dev/x rw",
])
def test_malformed_lines_are_refused(line: str) -> None:
    with pytest.raises(ParseError):
        parse_mountinfo(line + "\n")


@given(garbage)
def test_garbage_raises_only_parse_error(text: str) -> None:
    with contextlib.suppress(ParseError):
        parse_mountinfo(text)


_path_char = st.characters(blacklist_characters="\x00/", blacklist_categories=("Cs",))


@given(st.lists(st.text(_path_char, min_size=1, max_size=8), min_size=1, max_size=5))
def test_escaped_mount_points_round_trip(parts: list[str]) -> None:
    point = "/" + "/".join(parts)
    host = Host("x", "x", 1024, mounts=[point])
    parsed = parse_mountinfo(mountinfo(host))
    assert parsed[-1].mount_point == point


def test_the_simulated_table_parses_and_is_clean() -> None:
    mounts = parse_mountinfo("\n".join(BASE_MOUNTS) + "\n")
    assert nested_mount(mounts) == ""


@pytest.mark.parametrize(("point", "nested"), [
    ("/root/.cache/huggingface/hub", False),  # a bind mount AT the root (ReadWritePaths=)
    ("/root/.cache/huggingface/hub/models--x", True),
    ("/root/.cache/huggingface/hub/models--x/blobs", True),
    ("//root/.cache/huggingface//hub/./blobs", True),
    ("/root/.ollama/models/blobs", True),
    ("/root/.ollama/models", False),
    ("/root/.ollama", False),
    ("/root", False),
    ("/root/.cache/huggingface/hubx", False),
])
def test_nested_mounts(point: str, nested: bool) -> None:
    line = parse_mount_line(f"40 22 8:1 / {point} rw - ext4 /dev/sda1 rw")
    problem = nested_mount([line], CACHE_ROOTS)
    assert bool(problem) is nested, problem
