"""Render a `Host` into entries: the complete fake host root, before it touches the disk."""

from __future__ import annotations

import posixpath

from magicstick_host.sim.entries import Entry, Link, Tree
from magicstick_host.sim.model import Host
from magicstick_host.sim.network import render_network
from magicstick_host.sim.render_os import render_os
from magicstick_host.sim.render_sys import render_sys


def render(host: Host) -> dict[str, Entry]:
    tree = Tree()
    render_sys(host, tree)
    render_os(host, tree)
    render_network(host, tree)
    _check(tree.entries)
    return dict(sorted(tree.entries.items()))


def _check(entries: dict[str, Entry]) -> None:
    """No entry below a symlink (it would land elsewhere), no link leaving the root."""
    for path, entry in entries.items():
        parent = posixpath.dirname(path)
        while parent:
            if isinstance(entries.get(parent), Link):
                raise ValueError(f"{path} is below the symlink {parent}")
            parent = posixpath.dirname(parent)
        if isinstance(entry, Link):
            target = posixpath.normpath(posixpath.join(posixpath.dirname(path), entry.target))
            if target == ".." or target.startswith("../"):
                raise ValueError(f"{path} -> {entry.target} leaves the root")
