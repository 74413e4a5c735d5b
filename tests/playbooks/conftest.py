"""Helpers for running the REAL ansible-playbook against a temporary host root.

Every playbook test imports from here (`from tests.playbooks.conftest import run_playbook`) or
uses the fixtures below. Tests that call these must be marked `@pytest.mark.real_commands`,
otherwise the suite's subprocess guard stops them.

- `run_playbook(playbook, extra_vars, check=False)` runs `ansible-playbook -i localhost, -c local`
  from this venv with a private ANSIBLE_HOME/temp dirs, no retry files, no colour, no config
  file from the caller's environment and non-boolean conditionals refused under every
  ansible-core line (ALLOW_BROKEN_CONDITIONALS off), and returns the CompletedProcess
  (stdout = the default callback's output).
- `recap(proc)` parses the PLAY RECAP line into ints, e.g. `recap(p)["changed"] == 0`.
- `changed_tasks(proc)` names the tasks (and loop items) that reported a change, for messages.
- `snapshot_checkout(dest)` copies the files the playbooks install (code, profiles, units,
  manifests) from this repository into `dest`, without caches: pass it as `magicstick_src` so a
  run never races with edits to the working tree.
- `make_host_root(root)` creates the directories a fresh Ubuntu host already has.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PLAYBOOKS = REPO / "playbooks"
# The venv that runs pytest also provides ansible-core.
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
# Modules run with the system python when there is one (it starts faster than the venv's); the
# modules need only the standard library.
TARGET_PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable

# What install.yml copies from a checkout (relative to the repository root).
CHECKOUT_PARTS = ("magicstick_host", "profiles", "units", "playbooks/files/manifests")
# Directories a fresh Ubuntu host already has; the playbooks do not create distribution dirs.
HOST_SKELETON = ("usr/local/lib", "usr/local/sbin", "etc/systemd/system", "var/lib")

_RECAP = re.compile(r"^\S+\s+:\s+((?:\w+=\d+\s*)+)$", re.MULTILINE)


def ansible_env(home: Path) -> dict[str, str]:
    """The caller's environment without its ANSIBLE_* settings, plus hermetic ones."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    cfg = home / "ansible.cfg"
    cfg.write_text("[defaults]\n", encoding="utf-8")
    env.update(
        {
            "ANSIBLE_CONFIG": str(cfg),
            "ANSIBLE_HOME": str(home),
            "ANSIBLE_LOCAL_TEMP": str(home / "tmp"),
            "ANSIBLE_REMOTE_TEMP": str(home / "remote-tmp"),
            "ANSIBLE_RETRY_FILES_ENABLED": "False",
            "ANSIBLE_NOCOLOR": "True",
            "ANSIBLE_FORCE_COLOR": "False",
            "ANSIBLE_PIPELINING": "True",
            "ANSIBLE_STDOUT_CALLBACK": "default",
            "ANSIBLE_LOCALHOST_WARNING": "False",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False",
            "ANSIBLE_PYTHON_INTERPRETER": TARGET_PYTHON,
            # a conditional that is not a boolean fails, as on 26.04's ansible-core (2.19+, the
            # default there); 2.16 (24.04) has the setting backported (2.16.19), lenient by default
            "ANSIBLE_ALLOW_BROKEN_CONDITIONALS": "False",
        }
    )
    return env


def run_playbook(
    playbook: str | Path,
    extra_vars: Mapping[str, Any],
    check: bool = False,
    *,
    extra_args: Iterable[str] = (),
    timeout: float = 1800,
) -> subprocess.CompletedProcess[str]:
    """Run a playbook (a path, or a name under playbooks/) against localhost over `-c local`.

    `timeout` tells a hung playbook from a slow one: an install takes about 3 minutes on a
    quiet 2-core machine, and went past 15 beside a soak at load 16."""
    path = Path(playbook)
    if not path.is_absolute():
        path = PLAYBOOKS / path
    with tempfile.TemporaryDirectory(prefix="ansible-home-") as home:
        argv = [
            str(ANSIBLE_PLAYBOOK),
            "-i",
            "localhost,",
            "-c",
            "local",
            str(path),
            # JSON, so paths and booleans arrive typed and unquoted
            "--extra-vars",
            json.dumps(dict(extra_vars)),
            *(["--check"] if check else []),
            *extra_args,
        ]
        return subprocess.run(
            argv,
            env=ansible_env(Path(home)),
            cwd=home,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def output(proc: subprocess.CompletedProcess[str]) -> str:
    """Both streams, for assertion messages."""
    return f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"


def recap(proc: subprocess.CompletedProcess[str]) -> dict[str, int]:
    """The PLAY RECAP counters of the (single) host: ok, changed, failed, skipped, ..."""
    matches = _RECAP.findall(proc.stdout)
    if len(matches) != 1:
        raise AssertionError(f"expected one PLAY RECAP line, found {len(matches)}\n{output(proc)}")
    return {k: int(v) for k, v in (pair.split("=") for pair in matches[0].split())}


def changed_tasks(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """`TASK name` or `TASK name: item` for every change the run reported."""
    found: list[str] = []
    task = "?"
    for line in proc.stdout.splitlines():
        if line.startswith("TASK ["):
            task = line[len("TASK [") : line.rfind("]")]
        elif line.startswith("changed: ["):
            item = re.search(r"\(item=(.*)\)", line)
            found.append(f"{task}: {item.group(1)}" if item else task)
    return found


def assert_succeeded(proc: subprocess.CompletedProcess[str]) -> dict[str, int]:
    """The run exited 0 with no failed or unreachable host; returns its recap."""
    assert proc.returncode == 0, output(proc)
    counts = recap(proc)
    assert counts["failed"] == 0 and counts["unreachable"] == 0, output(proc)
    return counts


def snapshot_checkout(dest: Path) -> Path:
    """Copy the installable parts of this repository to `dest` (no __pycache__, no *.pyc)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo")
    for part in CHECKOUT_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=ignore)
        else:
            (dest / part).mkdir(parents=True, exist_ok=True)
    return dest


def make_host_root(root: Path) -> Path:
    for rel in HOST_SKELETON:
        (root / rel).mkdir(parents=True, exist_ok=True)
    return root


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A snapshot of this repository's installable files."""
    return snapshot_checkout(tmp_path / "checkout")


@pytest.fixture
def host_root(tmp_path: Path) -> Path:
    """An empty host root with the directories a fresh Ubuntu host has."""
    return make_host_root(tmp_path / "root")
