"""`make bench`'s savings rows compare our parts with the standard ones swapped back
(tests/bench_swap.py): a swap that broke the tick would time a failure, not the standard part.
Each swap runs a publishing tick and an idle tick against the real apiserver, and both end
as ours do: exit 0, the report on the Node."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from magicstick_host.domain.report import REPORT_ANNOTATION
from magicstick_host.sim.writer import create_host, load_host
from tests.bench_swap import SWAPS
from tests.kubeserver.fixtures import KubeCluster

CHECKOUT = Path(__file__).resolve().parents[1]
SWAP = str(CHECKOUT / "tests" / "bench_swap.py")


@pytest.mark.real_commands
@pytest.mark.parametrize("part", sorted(SWAPS))
def test_a_tick_with_the_standard_part_swapped_back_publishes_its_report(
        part: str, kube: KubeCluster, tmp_path: Path) -> None:
    root = tmp_path / "host"
    create_host("strix-halo-ubuntu-26.04-ready", root)
    host = load_host(root)
    name = f"swap-{part.replace('.', '-')}"
    node = kube.create_node(name, boot_id=host.boot_id, kernel=host.kernel.release)
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = {**os.environ, "RUNTIME_DIRECTORY": str(runtime)}
    tick = [sys.executable, "-I", SWAP, str(CHECKOUT), part, "tick", "--root", str(root),
            "--executor", "sim", "--state-dir", str(tmp_path / "state"),
            "--kubeconfig", str(kube.server.kubeconfig("worker-cert")), "--node-name", name]
    for _ in range(2):  # the first publishes, the second finds nothing to write
        done = subprocess.run(tick, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(kube.read_node(name)["metadata"]["annotations"][REPORT_ANNOTATION])
    assert report["nodeUid"] == node["metadata"]["uid"]
