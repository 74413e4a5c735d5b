"""PCI sysfs attributes: `0x%04x\\n` ids, `0x%02x\\n` revision, `0x%06x\\n` class.

Strict, because a wrong vendor or class silently hides a GPU from the inventory.
"""

from __future__ import annotations

import re

from magicstick_host.domain.parsers.common import ParseError, shorten, single_line

_ADDRESS = re.compile(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")


def _hex(text: str, digits: int, what: str) -> str:
    body = single_line(text, what)
    if not re.fullmatch(rf"0x[0-9a-fA-F]{{{digits}}}", body):
        raise ParseError(f"{what}: not 0x + {digits} hex digits: {shorten(body)!r}")
    return body[2:].lower()


def parse_pci_id(text: str, what: str = "id") -> str:
    """vendor, device, subsystem_vendor, subsystem_device: `0x1002\\n` -> `1002`."""
    return _hex(text, 4, what)


def parse_pci_class(text: str) -> str:
    """`0x038000\\n` -> `038000`."""
    return _hex(text, 6, "class")


def parse_pci_revision(text: str) -> str:
    """`0xc1\\n` -> `c1`."""
    return _hex(text, 2, "revision")


def is_pci_address(name: str) -> bool:
    """`0000:c5:00.0` as sysfs names devices (domain:bus:device.function)."""
    return _ADDRESS.fullmatch(name) is not None
