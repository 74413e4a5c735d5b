"""Shared checks for the simulated host trees."""

from __future__ import annotations

import os
from pathlib import Path

PCI = "sys/devices/pci0000:00"
STRIX = "0000:c5:00.0"


def snapshot(root: Path) -> dict[str, tuple[str, str]]:
    """Every path under root: (kind, content or link target)."""
    out: dict[str, tuple[str, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir", "")
            elif path.is_socket():
                out[rel] = ("socket", "")
            else:
                out[rel] = ("file", path.read_text(encoding="utf-8"))
    return out


def parse_deb822(text: str) -> list[dict[str, str]]:
    stanzas: list[dict[str, str]] = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        fields: dict[str, str] = {}
        last = None
        for line in block.splitlines():
            if line.startswith(" "):
                assert last is not None, f"continuation without a field: {line!r}"
                fields[last] += "\n" + line
                continue
            key, sep, value = line.partition(": ")
            assert sep, f"not a deb822 field: {line!r}"
            assert key not in fields
            fields[key] = value
            last = key
        stanzas.append(fields)
    return stanzas


def read(root: Path, rel: str) -> str:
    return (root / rel).read_text(encoding="utf-8")
