"""AMD UMA carve-out files on the PCI device (Linux 7.0+): `uma/carveout_options` and
`uma/carveout`.

`carveout_options` has one line per option, `<index>: <name> (<size> GB|MB)`; the name may be
empty, which leaves two spaces (`1:  (1 GB)`). An option's label is the firmware's own text for
it: everything after `<index>: `, whitespace-trimmed (`Minimum (512 MB)`, `(1 GB)`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from magicstick_host.domain.evidence import CarveoutOption
from magicstick_host.domain.parsers.common import ParseError, parse_uint, shorten, split_lines

MAX_OPTIONS = 19
# the name is greedy so that a name containing parentheses still leaves the size at the end
_OPTION = re.compile(r"([0-9]{1,3}): (.*) \(([0-9]{1,7}) (GB|MB)\)")
_MI_PER_UNIT = {"GB": 1024, "MB": 1}


def parse_carveout_options(text: str) -> tuple[CarveoutOption, ...]:
    """The options in file order, sizes in MiB."""
    options: list[CarveoutOption] = []
    indexes: set[int] = set()
    sizes: set[int] = set()
    for lineno, line in enumerate(split_lines(text), start=1):
        match = _OPTION.fullmatch(line)
        if match is None:
            raise ParseError(f"line {lineno}: not '<index>: <name> (<size> GB|MB)': "
                             f"{shorten(line)!r}")
        index = int(match.group(1))
        size_mi = int(match.group(3)) * _MI_PER_UNIT[match.group(4)]
        if size_mi <= 0:
            raise ParseError(f"line {lineno}: size is zero")
        if index in indexes:
            raise ParseError(f"line {lineno}: duplicate index {index}")
        if size_mi in sizes:
            raise ParseError(f"line {lineno}: duplicate size {size_mi} MiB")
        indexes.add(index)
        sizes.add(size_mi)
        label = line[match.end(1) + 2 :].strip()
        options.append(CarveoutOption(index=index, label=label, size_mi=size_mi))
    if not options:
        raise ParseError("no options")
    if len(options) > MAX_OPTIONS:
        raise ParseError(f"{len(options)} options, at most {MAX_OPTIONS} exist")
    return tuple(options)


def parse_carveout_index(text: str) -> int:
    """`uma/carveout`: the index selected for the next boot."""
    index = parse_uint(text, "carveout")
    if index > 999:
        raise ParseError(f"carveout: index {index} out of range")
    return index


def size_text(size_mi: int) -> str:
    """The kernel's size text: whole GiB in GB, anything else in MB."""
    return f"{size_mi // 1024} GB" if size_mi % 1024 == 0 else f"{size_mi} MB"


def render_carveout_options(options: Sequence[tuple[int, str, int]]) -> str:
    """The kernel's format for (index, firmware name, MiB) entries."""
    return "".join(f"{index}: {name} ({size_text(mi)})\n" for index, name, mi in options)
