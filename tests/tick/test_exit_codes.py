"""Exit codes as documented (`magicstick-host --help`, README, the service unit), one test per
code, each a fresh process of the real CLI on a simulated host against the real apiserver:
5 when Kubernetes could not be reached or refused the worker (after the local step), 6 when an
effect failed, 74 for a local file the system would not let it write (70 only for a bug:
tests/test_cli.py)."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from magicstick_host.errors import ExitCode
from magicstick_host.sim.writer import load_host, write_host
from tests.harness.world import World
from tests.ports.test_state_store import make_unwritable

pytestmark = [pytest.mark.apiserver, pytest.mark.real_commands]

READY = "strix-halo-ubuntu-26.04-ready"
REPO = Path(__file__).resolve().parents[2]


def tick_process(
    world: World, kubeconfig: Path, *, limit_file_size: int | None = None
) -> subprocess.CompletedProcess[str]:
    """`magicstick-host tick` in a fresh process, as the timer runs it (simulated executor)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAGICSTICK_HOST_")}
    env.update(
        MAGICSTICK_HOST_ROOT=str(world.root),
        MAGICSTICK_HOST_EXECUTOR="sim",
        MAGICSTICK_HOST_STATE_DIR=str(world.state_dir),
        MAGICSTICK_HOST_KUBECONFIG=str(kubeconfig),
        MAGICSTICK_HOST_NODE_NAME=world.node_name,
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.pop("RUNTIME_DIRECTORY", None)

    def full_disk() -> None:  # a file-size limit: every write past it fails (EFBIG)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        assert limit_file_size is not None
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_size, limit_file_size))

    return subprocess.run(
        [sys.executable, "-m", "magicstick_host", "tick"],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=120, check=False,
        preexec_fn=full_disk if limit_file_size is not None else None,
    )  # fmt: skip


def kubeconfig_with(kube: Any, tmp_path: Path, *, server: str | None = None,
                    token: str | None = None) -> Path:
    config = yaml.safe_load(Path(kube.worker_kubeconfig).read_text())
    if server is not None:
        config["clusters"][0]["cluster"]["server"] = server
    if token is not None:
        config["users"][0]["user"] = {"token": token}
    path = tmp_path / "worker.kubeconfig"
    path.write_text(json.dumps(config))
    return path


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize("cluster", ["unreachable", "refused"])
def test_kubernetes_unreachable_or_refusing_is_5_after_the_local_step(
    tmp_path: Path, kube: Any, cluster: str
) -> None:
    world = World(tmp_path, kube, READY)
    world.published()
    world.create_request("reboot")
    world.tick()
    assert world.state().operation.phase == "RebootScheduled"  # type: ignore[union-attr]
    world.boot()
    bad = (
        kubeconfig_with(kube, tmp_path, server="https://127.0.0.1:1")
        if cluster == "unreachable"
        else kubeconfig_with(kube, tmp_path, token="not-a-token")
    )
    done = tick_process(world, bad)
    assert done.returncode == ExitCode.KUBE_UNAVAILABLE, done.stderr
    # the local step ran all the same: the new boot ended the operation
    assert world.state().operation.phase == "Succeeded"  # type: ignore[union-attr]
    assert "Traceback" not in done.stderr


def test_a_failed_effect_is_6(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, READY)
    host = load_host(world.root)
    host.faults.append("shutdown")  # every `shutdown` fails
    write_host(host, world.root)
    world.published()
    world.create_request("reboot")
    done = tick_process(world, Path(kube.worker_kubeconfig))
    assert done.returncode == ExitCode.EFFECT_FAILED, done.stderr
    op = world.state().operation
    assert op is not None and op.phase == "Failed" and "could not be scheduled" in op.message
    assert world.phase() == "Failed"  # the status was written: Kubernetes was fine


@pytest.mark.parametrize("fault", ["full disk", "unwritable state file"])
def test_a_local_file_the_system_will_not_write_is_74_with_its_path(
    tmp_path: Path, kube: Any, fault: str
) -> None:
    world = World(tmp_path, kube, READY)
    world.published()  # state.json exists
    world.create_request("reboot")
    state_file = world.state_dir / "state.json"
    undo = make_unwritable(state_file) if fault == "unwritable state file" else None
    try:
        done = tick_process(
            world, Path(kube.worker_kubeconfig),
            limit_file_size=1024 if fault == "full disk" else None,
        )
    finally:
        if undo is not None:
            undo()
    assert done.returncode == ExitCode.LOCAL_IO, done.stderr
    line = one_line(done.stderr)
    assert "local-file-fault" in line and str(state_file) in line
    # nothing was lost: once the fault is gone the next tick takes the request as usual
    assert world.state().operation is None
    world.tick()
    op = world.state().operation
    assert op is not None and op.action == "reboot" and op.phase == "RebootScheduled"
