"""The NVIDIA health where the administrator and the dashboard read it: `inspect --json`, the
human `inspect`, `status`, and the host report that a real tick publishes on the Node of the
real test apiserver. The simulated host renders a real socket inode for a running daemon."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from magicstick_host import schemas
from magicstick_host.cli.main import main
from magicstick_host.domain.nvidia_health import PERSISTENCED_SOCKET
from magicstick_host.sim.model import Host
from magicstick_host.sim.writer import create_host, load_host, write_host
from tests.harness.world import World

NVIDIA_HOST = "strix-halo-nvidia-ubuntu-26.04-ready"


def persistenced_inactive(host: Host) -> None:
    host.units["nvidia-persistenced"] = "inactive"
    host.nvidia_persistenced_socket = False


def socket_missing(host: Host) -> None:
    host.nvidia_persistenced_socket = False  # the unit still says active


def change_host(root: Path, change: Callable[[Host], None]) -> None:
    host = load_host(root)
    change(host)
    write_host(host, root)


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert err == "", err
    return code, out


DEGRADED = [
    pytest.param(persistenced_inactive, False, "nvidia-persistenced is not active", id="inactive"),
    pytest.param(socket_missing, True, f"{PERSISTENCED_SOCKET} is missing", id="socket-missing"),
]


@pytest.mark.parametrize(("change", "active", "says"), DEGRADED)
def test_inspect_shows_a_degraded_nvidia_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: Callable[[Host], None],
    active: bool, says: str,
) -> None:
    root = tmp_path / "host"
    create_host(NVIDIA_HOST, root)
    change_host(root, change)
    code, out = cli(capsys, "inspect", "--json", "--root", str(root))
    assert code == 0
    doc = json.loads(out)
    assert schemas.errors("inspect", doc) == []
    nvidia = doc["nvidia"]
    assert nvidia["state"] == "degraded" and nvidia["driverBound"] is True
    assert nvidia["persistencedActive"] is active and nvidia["persistencedSocket"] is False
    assert says in nvidia["message"] and "cannot start" in nvidia["message"]

    code, out = cli(capsys, "inspect", "--root", str(root))
    assert code == 0 and f"NVIDIA:   DEGRADED: {nvidia['message']}" in out.splitlines()


def test_inspect_of_a_healthy_and_of_a_cpu_only_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create_host(NVIDIA_HOST, tmp_path / "nvidia")
    create_host("cpu-only-ubuntu-24.04", tmp_path / "cpu")
    _, out = cli(capsys, "inspect", "--json", "--root", str(tmp_path / "nvidia"))
    assert json.loads(out)["nvidia"]["state"] == "healthy"
    _, out = cli(capsys, "inspect", "--json", "--root", str(tmp_path / "cpu"))
    assert json.loads(out)["nvidia"]["state"] == "absent"
    _, out = cli(capsys, "inspect", "--root", str(tmp_path / "cpu"))
    assert "NVIDIA:" not in out  # nothing to say about a GPU the host does not have


def test_status_shows_the_nvidia_health_of_its_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "host"
    create_host(NVIDIA_HOST, root)
    change_host(root, persistenced_inactive)
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    args = ["status", "--root", str(root), "--state-dir", str(state_dir), "--node-name", "n1"]
    code, out = cli(capsys, *args, "--json")
    assert code == 0
    doc = json.loads(out)
    assert schemas.errors("status", doc) == []
    assert doc["nvidia"]["state"] == "degraded" and doc["nvidia"]["persistencedActive"] is False
    assert doc["convergence"] is None
    code, out = cli(capsys, *args)
    lines = out.splitlines()
    assert f"NVIDIA:     DEGRADED: {doc['nvidia']['message']}" in lines
    assert "Converge:   never run on this host (magicstick-host converge)" in lines


# --- the host report, published by a real tick on the real apiserver ---------------------------


@pytest.mark.apiserver
@pytest.mark.parametrize(("change", "active", "says"), DEGRADED)
def test_the_report_shows_a_degraded_nvidia_host(
    tmp_path: Path, kube: Any, change: Callable[[Host], None], active: bool, says: str
) -> None:
    world = World(tmp_path, kube, NVIDIA_HOST)
    healthy = world.published()["nvidia"]
    assert healthy["state"] == "healthy" and healthy["persistencedSocket"] is True

    change_host(world.root, change)
    world.clock.advance(3600)  # past the report's minimum interval
    world.tick()
    report = world.report()
    assert report is not None and schemas.errors("report", report) == []
    nvidia = report["nvidia"]
    assert nvidia["state"] == "degraded"
    assert nvidia["persistencedActive"] is active and nvidia["persistencedSocket"] is False
    assert says in nvidia["message"]


@pytest.mark.apiserver
def test_a_cpu_only_report_says_absent(tmp_path: Path, kube: Any) -> None:
    report = World(tmp_path, kube, "cpu-only-ubuntu-24.04").published()
    assert report["nvidia"]["state"] == "absent" and report["nvidia"]["gpus"] == []
