"""Fresh processes: the lean path never imports the official client, and bad kubeconfigs are
one line on stderr with no library warnings (issues 10 and 15)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from magicstick_host.errors import ExitCode
from magicstick_host.sim.writer import create_host
from tests.kubeserver.fixtures import KubeCluster

pytestmark = pytest.mark.real_commands

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
from magicstick_host.errors import KubeNotFoundError
from magicstick_host.ports.kube import RealKube
port = RealKube(sys.argv[1], transport=sys.argv[2])
try:
    port.read_node("absent-node")
except KubeNotFoundError:
    pass
print(json.dumps({"transport": port.transport_name,
                  "kubernetes": sorted(m for m in sys.modules if m.split(".")[0] == "kubernetes")}))
"""


def python(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO, check=False)


def test_importing_the_port_and_the_lean_transport_loads_no_kubernetes() -> None:
    done = python("-c", "import sys; import magicstick_host.ports.kube, "
                  "magicstick_host.ports.kube_http, magicstick_host.ports.kubeconfig; "
                  "print(sorted(m for m in sys.modules if m.split('.')[0] == 'kubernetes'))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.apiserver
@pytest.mark.parametrize("user", ["worker", "worker-cert"])
def test_calls_on_the_lean_transport_load_no_kubernetes(kube: KubeCluster, user: str) -> None:
    done = python("-c", PROBE, str(kube.server.kubeconfig(user)), "auto")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"transport": "lean", "kubernetes": []}
    assert done.stderr == ""


@pytest.mark.apiserver
def test_the_official_client_with_insecure_tls_prints_no_warnings(
    kube: KubeCluster, tmp_path: Path
) -> None:
    cfg = yaml.safe_load(kube.worker_kubeconfig.read_text())
    cluster = cfg["clusters"][0]["cluster"]
    del cluster["certificate-authority"]
    cluster["insecure-skip-tls-verify"] = True
    path = tmp_path / "insecure.kubeconfig"
    path.write_text(json.dumps(cfg))
    done = python("-c", PROBE, str(path), "official")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["transport"] == "official"
    assert done.stderr == ""


def bad_kubeconfigs(tmp_path: Path) -> dict[str, Path]:
    good = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    paths = {"directory": tmp_path / "k3s.d"}
    paths["directory"].mkdir()
    texts = {
        "not-yaml": "garbage: [\n",
        "bad-server-url": json.dumps({**good, "clusters": [
            {"name": "c", "cluster": {"server": "https://127.0.0.1:64x43"}}]}),
        "missing-context": json.dumps({**good, "current-context": "gone"}),
    }
    for name, text in texts.items():
        paths[name] = tmp_path / f"{name}.yaml"
        paths[name].write_text(text)
    return paths


@pytest.mark.parametrize("case", ["directory", "not-yaml", "bad-server-url", "missing-context"])
def test_a_malformed_kubeconfig_is_exit_3_in_one_line_from_the_cli(
    tmp_path: Path, case: str
) -> None:
    create_host("strix-halo-ubuntu-26.04-ready", tmp_path / "host")
    kubeconfig = bad_kubeconfigs(tmp_path)[case]
    done = python("-m", "magicstick_host", "tick", "--root", str(tmp_path / "host"),
                  "--executor", "sim", "--state-dir", str(tmp_path / "state"),
                  "--kubeconfig", str(kubeconfig), "--node-name", "strix-01")
    assert done.returncode == ExitCode.BAD_INPUT, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "cannot load kubeconfig" in done.stderr and "Warning" not in done.stderr
    assert done.stdout == ""
