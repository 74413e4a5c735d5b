"""KFD topology node `properties`: `key value` lines, every value an unsigned integer."""

from __future__ import annotations

import re

from magicstick_host.domain.parsers.common import MAX_DIGITS, ParseError, shorten, split_lines
from magicstick_host.lite_dataclasses import dataclass

_PROPERTY = re.compile(r"([a-z0-9_]+) ([0-9]+)")


@dataclass(frozen=True)
class KfdProperties:
    values: dict[str, int]

    @property
    def gfx_target_version(self) -> int | None:
        return self.values.get("gfx_target_version")

    @property
    def drm_render_minor(self) -> int | None:
        return self.values.get("drm_render_minor")


def parse_kfd_properties(text: str) -> KfdProperties:
    values: dict[str, int] = {}
    for lineno, line in enumerate(split_lines(text), start=1):
        match = _PROPERTY.fullmatch(line)
        if match is None or len(match.group(2)) > MAX_DIGITS:
            raise ParseError(f"line {lineno}: not '<key> <integer>': {shorten(line)!r}")
        if match.group(1) in values:
            raise ParseError(f"line {lineno}: duplicate key {match.group(1)}")
        values[match.group(1)] = int(match.group(2))
    if not values:
        raise ParseError("no properties")
    return KfdProperties(values)
