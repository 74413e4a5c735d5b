"""Netplan values typed the way netplan types them. Pure.

netplan reads YAML with libyaml and gives each scalar its type by the key it sits under,
whatever its quoting (`dhcp4: "yes"` is true, `metric: "100"` is 100). The YAML reader
(ports/netplan_yaml.py) keeps every scalar a string, as netplan sees it before typing;
`netplan_bool`/`netplan_int` type a value the way netplan does, `netplan_network` takes the
`network:` mapping of a document.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from magicstick_host.domain.parsers.common import ParseError

if TYPE_CHECKING:
    from typing import Any

TRUE_WORDS = frozenset({"true", "yes", "on", "y"})
FALSE_WORDS = frozenset({"false", "no", "off", "n"})
NULL_WORDS = frozenset({"", "~", "null"})
_UINT = re.compile(r"^[0-9]{1,18}$")


def netplan_bool(value: Any) -> bool | None:
    """A boolean as netplan reads it (true/yes/on/y, false/no/off/n, any case); None if not."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        low = value.lower()
        if low in TRUE_WORDS:
            return True
        if low in FALSE_WORDS:
            return False
    return None


def netplan_int(value: Any) -> int | None:
    """A non-negative integer as netplan reads it; None if not."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and _UINT.match(value):
        return int(value)
    return None


def netplan_network(doc: dict[str, Any]) -> dict[str, Any]:
    """The `network:` mapping of a document ({} when there is none). ParseError when the
    document has other top-level keys or `network` is not a mapping."""
    extra = sorted(set(doc) - {"network"})
    if extra:
        raise ParseError(f"top-level keys other than network: {', '.join(extra)}")
    network = doc.get("network", {})
    if network is None:
        return {}
    if not isinstance(network, dict):
        raise ParseError("network is not a mapping")
    return network
