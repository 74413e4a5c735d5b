"""Which running kernels carry the Strix Halo (gfx1151) fixes (operations.md "Plan rules")."""

from __future__ import annotations

import re

# the first release line with the gfx1151 fixes, compared by the numbers of `uname -r`
MIN_UPSTREAM = (6, 18, 4)
# Ubuntu's OEM 6.14 kernels got the fixes backported from this ABI number on
OEM_614_MIN_ABI = 1018

# as text, compiled (by re's cache) when a kernel release is first compared: not at import
_NUMBERS = r"^(\d+)\.(\d+)(?:\.(\d+))?(?:$|[-+~_.])"
_OEM_614 = r"^6\.14\.0-(\d+)-oem$"
_UBUNTU = r"^(\d+)\.(\d+)\.(\d+)-(\d+)-([a-z0-9]+(?:-[a-z0-9]+)*)$"


def kernel_numbers(release: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) from a `uname -r` string; None when it does not start that way."""
    match = re.match(_NUMBERS, release)
    if match is None:
        return None
    return int(match[1]), int(match[2]), int(match[3] or 0)


def kernel_order_key(release: str) -> tuple[int, int, int, int] | None:
    """A sort key (major, minor, patch, Ubuntu ABI) for comparing kernel releases.

    Non-Ubuntu releases get ABI 0. None when unparsable: such a kernel is never called newer.
    """
    numbers = kernel_numbers(release)
    if numbers is None:
        return None
    ubuntu = re.match(_UBUNTU, release)
    abi = int(ubuntu[4]) if ubuntu else 0
    return (*numbers, abi)


def is_suitable_kernel(release: str | None, profile_target: str | None) -> bool:
    if not release:
        return False
    if profile_target is not None and release == profile_target:
        return True
    oem = re.match(_OEM_614, release)
    if oem is not None:
        return int(oem[1]) >= OEM_614_MIN_ABI
    numbers = kernel_numbers(release)
    return numbers is not None and numbers >= MIN_UPSTREAM


def is_newer_kernel(release: str, than: str) -> bool:
    a, b = kernel_order_key(release), kernel_order_key(than)
    return a is not None and b is not None and a > b
