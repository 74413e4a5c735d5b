"""Create, rewrite and load simulated host roots.

`create_host` renders a scenario into a sibling temporary directory and renames it into place,
so a half-written tree is never mistaken for a host. `write_host` re-renders an existing root in
place (effects: install a kernel, boot), touching only the paths the simulator rendered, so the
worker's own files under the root survive. `load_host` reads `.magicstick-sim/host.json` and
then takes back the facts the worker (or a real playbook) changes directly in the tree.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from magicstick_host.errors import BadInputError
from magicstick_host.sim.codec import host_from_dict, host_to_dict
from magicstick_host.sim.entries import Dir, Entry, File, Link, Socket
from magicstick_host.sim.faults import CARVEOUT_WRITE
from magicstick_host.sim.model import Host, default_boot_id
from magicstick_host.sim.network import take_back_netplan

if TYPE_CHECKING:
    from typing import Any

SIM_DIR = ".magicstick-sim"
HOST_JSON = f"{SIM_DIR}/host.json"
FORMAT = 1
# the modprobe.d directories whose regular files load_host takes back from the tree
MODPROBE_DIRS = ("etc/modprobe.d", "run/modprobe.d", "usr/lib/modprobe.d", "lib/modprobe.d")


def build_host(name: str, *, boot_id: str | None = None) -> Host:
    """The model of scenario `name`, with its boot ID set (deterministic unless overridden)."""
    # the scenarios, the renderer and the cache builder are imported by what builds or
    # renders a host, not by the sim executor's reads (an idle simulated tick only loads)
    from magicstick_host.sim.scenarios import SCENARIOS

    scenario = SCENARIOS.get(name)
    if scenario is None:
        valid = ", ".join(sorted(SCENARIOS))
        raise BadInputError(f"unknown scenario {name!r}; valid scenarios: {valid}")
    host = scenario.build()
    host.boot_id = _normalise_boot_id(boot_id) if boot_id is not None else default_boot_id(name)
    return host


def create_host(name: str, directory: Path, *, boot_id: str | None = None) -> None:
    import shutil
    import tempfile

    from magicstick_host.sim.model_cache import populate_model_caches

    host = build_host(name, boot_id=boot_id)
    directory = Path(directory)
    if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
        raise BadInputError(f"{directory} exists and is not a directory")
    if directory.is_dir() and any(directory.iterdir()):
        raise BadInputError(f"{directory} is not empty; give a new or empty directory")
    parent = directory.absolute().parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", suffix=".partial", dir=parent))
    try:
        write_host(host, tmp)
        populate_model_caches(host, tmp)  # once: a cache is never re-rendered
        os.chmod(tmp, 0o755)
        os.replace(tmp, directory)  # replaces an empty directory atomically
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_host(host: Host, root: Path) -> None:
    """Render `host` into `root`, removing what an earlier render made and no longer makes."""
    from magicstick_host.sim.render import render

    root = Path(root)
    entries = render(host)
    # a broken sysfs attribute (sim.carveout_fault.break_carveout_write) is left exactly as it is
    frozen = {p for p in entries if p.endswith("/uma/carveout")} if CARVEOUT_WRITE in host.faults \
        else set()
    for path in sorted(_previous_manifest(root) - entries.keys(), reverse=True):
        target = root / path
        if target.is_symlink() or target.is_file() or target.is_socket():
            target.unlink()
        _prune_empty(root, target if target.is_dir() else target.parent)
    for path, entry in entries.items():
        if path not in frozen:
            _materialise(root / path, entry)
    data: dict[str, Any] = {"format": FORMAT, **host_to_dict(host), "rendered": sorted(entries)}
    sim = root / SIM_DIR
    sim.mkdir(exist_ok=True)
    tmp = sim / "host.json.tmp"
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, root / HOST_JSON)


def load_host(root: Path) -> Host:
    """The model of the host at `root`, including the changes made in the tree since it was
    written: `uma/carveout` selections and the modprobe.d files."""
    root = Path(root)
    try:
        data = json.loads((root / HOST_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BadInputError(f"{root} is not a simulated host: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BadInputError(f"{root / HOST_JSON}: unsupported format")
    host = host_from_dict(data)
    _take_back_tree_facts(host, root)
    return host


def _take_back_tree_facts(host: Host, root: Path) -> None:
    for dev in host.pci:
        if dev.uma is None:
            continue
        try:
            text = (root / "sys/devices/pci0000:00" / dev.address / "uma/carveout").read_text()
            dev.uma.selected = int(text.strip())
        except (OSError, ValueError):
            pass
    files: dict[str, str] = {}
    for rel in MODPROBE_DIRS:
        directory = root / rel
        if _has_symlink(root, rel) or not directory.is_dir():
            continue
        for item in sorted(directory.iterdir()):
            if item.is_file() and not item.is_symlink():
                files[f"{rel}/{item.name}"] = item.read_text(encoding="utf-8")
    host.modprobe_files = files
    take_back_netplan(host, root)


def _has_symlink(root: Path, rel: str) -> bool:
    path = root
    for part in rel.split("/"):
        path = path / part
        if path.is_symlink():
            return True
    return False


def _prune_empty(root: Path, directory: Path) -> None:
    """Remove `directory` and its parents below `root` while they are empty (a module that
    is no longer loaded leaves no /sys/module/<name>, a KFD node no nodes/<n>)."""
    while directory != root and root in directory.parents and not directory.is_symlink():
        try:
            directory.rmdir()
        except OSError:  # not empty, or gone
            if directory.exists():
                return
        directory = directory.parent


def _previous_manifest(root: Path) -> set[str]:
    try:
        data = json.loads((root / HOST_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    rendered = data.get("rendered") if isinstance(data, dict) else None
    return {p for p in rendered if isinstance(p, str)} if isinstance(rendered, list) else set()


def _materialise(path: Path, entry: Entry) -> None:
    if isinstance(entry, Dir):
        path.mkdir(parents=True, exist_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(entry, File) and path.is_file() and not path.is_symlink():
        try:
            if path.read_text(encoding="utf-8") == entry.text:
                return  # unchanged: keep the inode (and any reader's view of it)
        except (OSError, UnicodeDecodeError):
            pass
    if isinstance(entry, Socket) and path.is_socket() and not path.is_symlink():
        return
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    if isinstance(entry, Socket):
        # mknod(S_IFSOCK) needs no privilege and, unlike bind(), no short path
        os.mknod(path, stat.S_IFSOCK | 0o755)
    elif isinstance(entry, Link):
        path.symlink_to(entry.target)
    elif isinstance(entry, File):
        path.write_text(entry.text, encoding="utf-8")


def _normalise_boot_id(value: str) -> str:
    text = value.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}", text):
        raise BadInputError(f"boot id {value!r} is not a UUID like 8-4-4-4-12 hex digits")
    import uuid

    return str(uuid.UUID(text))
