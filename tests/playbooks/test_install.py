"""playbooks/install.yml, run for real by ansible-playbook against temporary host roots.

apt and systemd are switched off (magicstick_install_packages / magicstick_manage_systemd): there
is neither to use here. Everything else runs exactly as on a host, under `magicstick_root`.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.playbooks.conftest import (
    REPO,
    assert_succeeded,
    changed_tasks,
    make_host_root,
    output,
    recap,
    run_playbook,
    snapshot_checkout,
)

# ansible-playbook for real: each run takes seconds, a first install of the real tree about a minute
pytestmark = [
    pytest.mark.real_commands,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="installs root-owned files: run as root"),
]

LIB = "usr/local/lib/magicstick/host-management"
WRAPPER = "usr/local/sbin/magicstick-host"
STATE = "var/lib/magicstick/host-management"
UNITS = "etc/systemd/system"
K3S_MANIFESTS = "var/lib/rancher/k3s/server/manifests"
TREES = ("magicstick_host", "profiles")
# Of playbooks/, what the worker runs (relative to playbooks/): install.yml, its role, the
# manifests and anything else stay out.
WORKER_PLAYBOOKS = ("prepare.yml", "memory.yml", "roles", "roles/prepare", "roles/memory")


def install_vars(root: Path, src: Path) -> dict[str, object]:
    return {
        "magicstick_root": str(root),
        "magicstick_src": str(src),
        "magicstick_install_packages": False,
        "magicstick_manage_systemd": False,
    }


def tree(base: Path) -> dict[str, Path]:
    """Relative path -> path of everything below `base`."""
    return {str(p.relative_to(base)): p for p in sorted(base.rglob("*"))}


def source_entries(src: Path) -> dict[str, Path]:
    """What install.yml must install from a checkout: the trees without byte-code, and the
    worker's playbooks with their roles."""
    found: dict[str, Path] = {}
    for name in TREES:
        found[name] = src / name
        for rel, path in tree(src / name).items():
            if "__pycache__" not in Path(rel).parts and path.suffix not in (".pyc", ".pyo"):
                found[f"{name}/{rel}"] = path
    found["playbooks"] = src / "playbooks"
    for rel, path in tree(src / "playbooks").items():
        if rel in WORKER_PLAYBOOKS or rel.startswith(("roles/prepare/", "roles/memory/")):
            found[f"playbooks/{rel}"] = path
    return found


def add_playbooks(src: Path) -> Path:
    """The whole playbooks/ tree of this repository into a checkout snapshot."""
    shutil.copytree(
        REPO / "playbooks",
        src / "playbooks",
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    return src


def mode_and_owner(path: Path) -> tuple[str, int, int]:
    st = path.lstat()
    return oct(stat.S_IMODE(st.st_mode)), st.st_uid, st.st_gid


def installed_manifest_name(name: str) -> str:
    return name if name.startswith("magicstick") else f"magicstick-{name}"


# --- static -------------------------------------------------------------------------------------


def test_syntax_check() -> None:
    proc = run_playbook("install.yml", {}, extra_args=["--syntax-check"])
    assert proc.returncode == 0, output(proc)


# --- the real tree: install, then install again ---------------------------------------------------


@dataclass
class Installed:
    src: Path
    root: Path
    first: subprocess.CompletedProcess[str]
    second: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("install")
    src = add_playbooks(snapshot_checkout(base / "checkout"))
    # a manifest with a known name, and byte-code left in the checkout (must not be installed)
    (src / "playbooks/files/manifests/zz-test-crd.yaml").write_text("kind: Test\n")
    (src / "magicstick_host/__pycache__").mkdir(exist_ok=True)
    (src / "magicstick_host/__pycache__/errors.cpython-311.pyc").write_bytes(b"\0junk")

    root = make_host_root(base / "root")
    (root / K3S_MANIFESTS).mkdir(parents=True)  # a K3s server node
    # left over from an older version: must be removed
    for rel in (
        "profiles/retired-profile.yaml",
        "magicstick_host/__pycache__/x.cpython-312.pyc",
        "playbooks/install.yml",
        "playbooks/roles/retired/tasks/main.yml",
    ):
        (root / LIB / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / LIB / rel).write_text("old\n")

    first = run_playbook("install.yml", install_vars(root, src))
    second = run_playbook("install.yml", install_vars(root, src))
    return Installed(src, root, first, second)


def test_first_run_installs_the_tree_exactly(installed: Installed) -> None:
    counts = assert_succeeded(installed.first)
    assert counts["changed"] > 0
    lib = installed.root / LIB
    wanted = source_entries(installed.src)
    # nothing more (no byte-code, no stale profile), nothing less
    assert sorted(tree(lib)) == sorted(wanted)
    for rel, src_path in wanted.items():
        path = lib / rel
        if src_path.is_dir():
            assert path.is_dir() and not path.is_symlink(), rel
            assert mode_and_owner(path) == ("0o755", 0, 0), rel
        else:
            assert path.is_file() and not path.is_symlink(), rel
            assert path.read_bytes() == src_path.read_bytes(), rel
            assert mode_and_owner(path) == ("0o644", 0, 0), rel
    for parent in (lib, lib.parent):
        assert mode_and_owner(parent) == ("0o755", 0, 0)
    # the worker's playbooks, next to the profiles they read; not install.yml or its role
    for rel in (
        "prepare.yml",
        "memory.yml",
        "roles/prepare/tasks/main.yml",
        "roles/memory/tasks/main.yml",
        "roles/prepare/vars/main.yml",
    ):
        assert (lib / "playbooks" / rel).is_file(), rel
    for rel in ("install.yml", "roles/install", "files", "roles/retired"):
        assert not (lib / "playbooks" / rel).exists(), rel


def test_first_run_installs_command_units_state_and_manifests(installed: Installed) -> None:
    assert_succeeded(installed.first)
    root = installed.root

    wrapper = root / WRAPPER
    assert mode_and_owner(wrapper) == ("0o755", 0, 0)
    text = wrapper.read_text()
    assert text.startswith("#!/usr/bin/python3 -I\n")
    # the content names the host path, not the temporary root
    assert 'sys.path.insert(0, "/usr/local/lib/magicstick/host-management")' in text
    assert str(root) not in text

    for unit in (REPO / "units").iterdir():
        path = root / UNITS / unit.name
        assert path.read_bytes() == unit.read_bytes()
        assert mode_and_owner(path) == ("0o644", 0, 0)

    assert mode_and_owner(root / STATE) == ("0o700", 0, 0)
    assert mode_and_owner((root / STATE).parent) == ("0o755", 0, 0)

    manifests = sorted((installed.src / "playbooks/files/manifests").glob("*.yaml"))
    assert manifests, "the fixture adds at least one"
    assert sorted(p.name for p in (root / K3S_MANIFESTS).iterdir()) == sorted(
        installed_manifest_name(m.name) for m in manifests
    )
    for manifest in manifests:
        path = root / K3S_MANIFESTS / installed_manifest_name(manifest.name)
        assert path.read_bytes() == manifest.read_bytes()
        assert mode_and_owner(path) == ("0o600", 0, 0)


def test_second_run_changes_nothing(installed: Installed) -> None:
    counts = assert_succeeded(installed.second)
    assert counts["changed"] == 0, changed_tasks(installed.second)


def test_installed_command_runs(installed: Installed, tmp_path: Path) -> None:
    """The installed wrapper and tree work: the wrapper's own code, pointed at the temp root."""
    assert_succeeded(installed.first)
    text = (installed.root / WRAPPER).read_text()
    launcher = tmp_path / "magicstick-host"
    launcher.write_text(text.replace("/usr/local/lib/", f"{installed.root}/usr/local/lib/"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAGICSTICK_HOST_")}
    # this venv's python stands in for /usr/bin/python3 with Ubuntu's packages
    proc = subprocess.run(
        [sys.executable, "-I", str(launcher), "--help"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Exit codes" in proc.stdout
    assert not list((installed.root / LIB).rglob("__pycache__")), "wrote byte-code"


# --- a tiny tree: check mode, agents, updates -----------------------------------------------------


def tiny_checkout(src: Path) -> Path:
    files = {
        "magicstick_host/__init__.py": "",
        "magicstick_host/sub/__init__.py": "",
        "magicstick_host/sub/mod.py": "VALUE = 1\n",
        "magicstick_host/schemas/x.schema.json": "{}\n",
        "profiles/a.yaml": "id: a\n",
        "profiles/b.yaml": "id: b\n",
        "playbooks/files/manifests/magicstick-crd.yaml": "kind: Test\n",
        "playbooks/install.yml": "- hosts: all\n",
        "playbooks/roles/install/tasks/main.yml": "[]\n",
        "playbooks/prepare.yml": "- hosts: all\n",
        "playbooks/roles/prepare/tasks/main.yml": "[]\n",
        "playbooks/roles/prepare/vars/main.yml": "{}\n",
        "playbooks/memory.yml": "- hosts: all\n",
        "playbooks/roles/memory/tasks/main.yml": "[]\n",
        "playbooks/roles/memoryless/tasks/main.yml": "[]\n",
        "playbooks/memory.yml.orig": "- hosts: all\n",
    }
    for rel, content in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(content)
    shutil.copytree(REPO / "units", src / "units")
    return src


def test_check_mode_on_a_fresh_root_changes_nothing(tmp_path: Path) -> None:
    src = tiny_checkout(tmp_path / "checkout")
    root = make_host_root(tmp_path / "root")
    (root / K3S_MANIFESTS).mkdir(parents=True)
    before = sorted(tree(root))
    proc = run_playbook("install.yml", install_vars(root, src), check=True)
    counts = assert_succeeded(proc)
    assert counts["changed"] > 0  # it reports what it would do ...
    assert sorted(tree(root)) == before  # ... and does none of it


def test_updates_follow_the_checkout_on_an_agent_node(tmp_path: Path) -> None:
    src = tiny_checkout(tmp_path / "checkout")
    root = make_host_root(tmp_path / "root")  # no K3s server directory: an agent node
    lib = root / LIB

    assert_succeeded(run_playbook("install.yml", install_vars(root, src)))
    assert (lib / "magicstick_host/sub/mod.py").read_text() == "VALUE = 1\n"
    assert not (root / "var/lib/rancher").exists(), "an agent gets no manifests, no K3s dirs"

    # the checkout moves on; the host drifts
    (src / "magicstick_host/sub/mod.py").write_text("VALUE = 2\n")
    (src / "profiles/b.yaml").unlink()
    (src / "magicstick_host/new.py").write_text("NEW = True\n")
    shutil.rmtree(src / "magicstick_host/schemas")
    (src / "playbooks/memory.yml").write_text("- hosts: localhost\n")
    shutil.rmtree(src / "playbooks/roles/prepare/vars")
    (lib / "profiles/a.yaml").chmod(0o600)
    os.chown(lib / "magicstick_host/__init__.py", 1, 1)
    (lib / "magicstick_host/sub").chmod(0o700)

    proc = run_playbook("install.yml", install_vars(root, src))
    assert_succeeded(proc)
    assert sorted(tree(lib)) == sorted(source_entries(src))
    assert (lib / "magicstick_host/sub/mod.py").read_text() == "VALUE = 2\n"
    assert (lib / "magicstick_host/new.py").read_text() == "NEW = True\n"
    assert (lib / "playbooks/memory.yml").read_text() == "- hosts: localhost\n"
    assert not (lib / "playbooks/roles/prepare/vars").exists()
    assert mode_and_owner(lib / "profiles/a.yaml") == ("0o644", 0, 0)
    assert mode_and_owner(lib / "magicstick_host/__init__.py") == ("0o644", 0, 0)
    assert mode_and_owner(lib / "magicstick_host/sub") == ("0o755", 0, 0)

    again = run_playbook("install.yml", install_vars(root, src))
    assert recap(again)["changed"] == 0, changed_tasks(again)
