"""playbooks/install.yml, run for real by ansible-playbook against temporary host roots.

apt and systemd are switched off (magicstick_install_packages / magicstick_manage_systemd): there
is neither to use here. Everything else runs exactly as on a host, under `magicstick_root`.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.kubeserver.fixtures import KubeCluster
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
# the host simulator: demos and tests only, never on an appliance
LEFT_OUT = "magicstick_host/sim"
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
            full = f"{name}/{rel}"
            if full == LEFT_OUT or full.startswith(LEFT_OUT + "/"):
                continue
            if "__pycache__" not in Path(rel).parts and path.suffix not in (".pyc", ".pyo"):
                found[full] = path
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
    # the simulator stays in the checkout; the rest of the package is there
    assert (installed.src / LEFT_OUT / "runner.py").is_file()
    assert not (lib / LEFT_OUT).exists()
    assert (lib / "magicstick_host/tick.py").is_file()


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


# this venv's python stands in for /usr/bin/python3 with Ubuntu's packages; the checkout's
# editable install is taken off the import path first, so that only the installed tree serves
# magicstick_host (a module the install left out must not come from the checkout)
WITHOUT_THE_CHECKOUT = (
    "import sys; sys.meta_path[:] = [f for f in sys.meta_path "
    "if 'editable' not in getattr(f, '__module__', '')]; "
    "sys.argv = sys.argv[1:]; exec(compile(open(sys.argv[0]).read(), sys.argv[0], 'exec'))"
)


def test_installed_command_runs(installed: Installed, tmp_path: Path) -> None:
    """The installed wrapper and tree work: the wrapper's own code, pointed at the temp root."""
    assert_succeeded(installed.first)
    text = (installed.root / WRAPPER).read_text()
    launcher = tmp_path / "magicstick-host"
    launcher.write_text(text.replace("/usr/local/lib/", f"{installed.root}/usr/local/lib/"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAGICSTICK_HOST_")}

    def installed_command(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-I", "-c", WITHOUT_THE_CHECKOUT, str(launcher), *args],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
        )  # fmt: skip

    proc = installed_command("--help")
    assert proc.returncode == 0, proc.stderr
    assert "Exit codes" in proc.stdout
    # without the simulator, its commands say so in one line (bad input); nothing else needs it
    sim = installed_command("sim", "list")
    assert sim.returncode == 3, sim.stderr
    assert sim.stderr.count("\n") == 1 and "simulator is not installed" in sim.stderr
    inspect = installed_command("inspect", "--root", str(tmp_path))
    assert inspect.returncode == 0, inspect.stderr
    assert not list((installed.root / LIB).rglob("__pycache__")), "wrote byte-code"


# --- a tiny tree: check mode, agents, updates -----------------------------------------------------


def tiny_checkout(src: Path) -> Path:
    files = {
        "magicstick_host/__init__.py": "",
        "magicstick_host/sub/__init__.py": "",
        "magicstick_host/sub/mod.py": "VALUE = 1\n",
        "magicstick_host/sim/runner.py": "SIMULATED = True\n",
        "magicstick_host/simulated_not.py": "KEPT = True\n",
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


# --- what is shipped to K3s, and the ai-system Namespace ---------------------------------------

MANIFESTS = REPO / "playbooks/files/manifests"


def test_every_shipped_manifest_is_one_object_and_none_is_the_system_namespace() -> None:
    """K3s deletes an object that leaves its AddOn file, so each file holds exactly one; and the
    cluster's own ai-system Namespace is never one of them."""
    files = sorted(MANIFESTS.glob("*.yaml"))
    assert files
    objects = []
    for path in files:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        assert len(docs) == 1, path.name
        objects.append((docs[0]["kind"], docs[0]["metadata"]["name"]))
    assert ("Namespace", "ai-system") not in objects
    assert not (MANIFESTS / "magicstick-host-00-namespace.yaml").exists()
    assert sorted(objects) == sorted([
        ("CustomResourceDefinition", "hostoperations.appliance.magicstick.dev"),
        ("Role", "ai-appliance-dashboard-host-operations"),
        ("RoleBinding", "ai-appliance-dashboard-host-operations"),
        ("Namespace", "host-management"),
        ("Role", "ai-appliance-dashboard-network-credentials"),
        ("RoleBinding", "ai-appliance-dashboard-network-credentials"),
    ])


K3S_KUBECONFIG = "etc/rancher/k3s/k3s.yaml"


def k3s_server(tmp_path: Path, kubeconfig: Path | None) -> tuple[Path, Path]:
    """A tiny checkout and a host root with the K3s server directory (and its kubeconfig)."""
    src = tiny_checkout(tmp_path / "checkout")
    root = make_host_root(tmp_path / "root")
    (root / K3S_MANIFESTS).mkdir(parents=True)
    if kubeconfig is not None:
        (root / K3S_KUBECONFIG).parent.mkdir(parents=True)
        shutil.copyfile(kubeconfig, root / K3S_KUBECONFIG)
        (root / K3S_KUBECONFIG).chmod(0o600)
    return src, root


def namespace_vars(root: Path, src: Path, namespace: str, **extra: object) -> dict[str, object]:
    # this venv's python (with the kubernetes library) stands in for the host's python3
    return {**install_vars(root, src), "magicstick_python": sys.executable,
            "magicstick_system_namespace": namespace, **extra}


def read_namespace(kube: KubeCluster, name: str) -> tuple[int, Any]:
    return kube.request("GET", f"/api/v1/namespaces/{name}")


@pytest.mark.apiserver
def test_a_server_node_creates_the_system_namespace_only_if_missing(
    kube: KubeCluster, tmp_path: Path
) -> None:
    # the node's K3s admin kubeconfig, in the shape K3s writes it
    src, root = k3s_server(tmp_path, kube.admin_cert_kubeconfig)
    namespace = "ai-system-" + secrets.token_hex(4)  # the harness owns the real one

    dry = run_playbook("install.yml", namespace_vars(root, src, namespace), check=True)
    assert_succeeded(dry)
    assert f"install : Create the {namespace} Namespace if it is missing" in changed_tasks(dry)
    assert read_namespace(kube, namespace)[0] == 404, "check mode created it"

    first = run_playbook("install.yml", namespace_vars(root, src, namespace))
    assert_succeeded(first)
    status, created = read_namespace(kube, namespace)
    assert status == 200, created
    assert (root / K3S_MANIFESTS / "magicstick-crd.yaml").is_file()

    # from now on the Namespace is someone else's (the cluster's tree): never touched again
    status, labelled = kube.request(
        "PATCH", f"/api/v1/namespaces/{namespace}",
        {"metadata": {"labels": {"app.kubernetes.io/managed-by": "appliance-tree"}}},
        content_type="application/merge-patch+json")
    assert status == 200, labelled
    again = run_playbook("install.yml", namespace_vars(root, src, namespace))
    assert recap(again)["changed"] == 0, changed_tasks(again)
    _, after = read_namespace(kube, namespace)
    assert after["metadata"]["resourceVersion"] == labelled["metadata"]["resourceVersion"]
    assert after["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "appliance-tree"


@pytest.mark.apiserver
def test_an_unreachable_cluster_fails_the_run_in_one_line_after_the_worker_is_installed(
    kube: KubeCluster, tmp_path: Path
) -> None:
    dead = tmp_path / "dead.yaml"
    cfg = yaml.safe_load(kube.admin_cert_kubeconfig.read_text())
    cfg["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    dead.write_text(yaml.safe_dump(cfg))
    src, root = k3s_server(tmp_path, dead)
    proc = run_playbook("install.yml", namespace_vars(
        root, src, "ai-system", magicstick_kube_retries=1, magicstick_kube_delay=0))
    assert proc.returncode != 0
    assert recap(proc)["failed"] == 1
    assert "cannot ensure Namespace ai-system with" in proc.stdout, output(proc)
    # the worker is in place and its timer would run; nothing was handed to K3s
    assert (root / WRAPPER).is_file() and (root / LIB / "magicstick_host/sub/mod.py").is_file()
    assert list((root / K3S_MANIFESTS).iterdir()) == []


def test_without_the_admin_kubeconfig_the_manifests_still_go_to_k3s(tmp_path: Path) -> None:
    """The cluster's own tree provides ai-system on an appliance; nothing to create it with
    here. A manifest an older version shipped (the ai-system Namespace) is never removed:
    K3s would delete the Namespace and everything in it."""
    src, root = k3s_server(tmp_path, None)
    old = root / K3S_MANIFESTS / "magicstick-host-00-namespace.yaml"
    old.write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ai-system\n")
    proc = run_playbook("install.yml", install_vars(root, src))
    assert_succeeded(proc)
    assert not [t for t in changed_tasks(proc) if "Namespace" in t]
    assert sorted(p.name for p in (root / K3S_MANIFESTS).iterdir()) == [
        "magicstick-crd.yaml", "magicstick-host-00-namespace.yaml"]
    assert old.read_text().endswith("name: ai-system\n")
