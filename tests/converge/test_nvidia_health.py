"""The NVIDIA health section (domain/nvidia_health.py) on simulated hosts, collected for real."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from magicstick_host import app, schemas
from magicstick_host.domain.nvidia_health import PERSISTENCED_SOCKET, nvidia_health
from magicstick_host.sim.model import Host
from magicstick_host.sim.writer import create_host, load_host, write_host

NVIDIA_HOST = "strix-halo-nvidia-ubuntu-26.04-ready"


def simulated(tmp_path: Path, scenario: str, change: Callable[[Host], None] | None = None) -> Path:
    root = tmp_path / scenario
    create_host(scenario, root)
    if change is not None:
        host = load_host(root)
        change(host)
        write_host(host, root)
    return root


def health(root: Path) -> dict[str, Any]:
    section = nvidia_health(app.gather(str(root), ()))
    assert schemas.errors("nvidia-health", section) == []
    return section


def persistenced_inactive(host: Host) -> None:
    host.units["nvidia-persistenced"] = "inactive"
    host.nvidia_persistenced_socket = False


def socket_missing(host: Host) -> None:
    host.nvidia_persistenced_socket = False  # the unit still says active


def test_a_healthy_nvidia_host(tmp_path: Path) -> None:
    section = health(simulated(tmp_path, NVIDIA_HOST))
    assert section["state"] == "healthy"
    assert section["driverBound"] is True and section["driverVersion"] == "580.95.05"
    assert section["persistencedActive"] is True and section["persistencedSocket"] is True
    assert section["gpus"] == [{"pciAddress": "0000:01:00.0", "driver": "nvidia"}]


def test_persistenced_inactive_is_degraded_with_the_fix(tmp_path: Path) -> None:
    section = health(simulated(tmp_path, NVIDIA_HOST, persistenced_inactive))
    assert section["state"] == "degraded"
    assert section["persistencedActive"] is False and section["persistencedSocket"] is False
    assert "nvidia-persistenced is not active" in section["message"]
    assert "systemctl start nvidia-persistenced" in section["message"]
    assert "cannot start" in section["message"]


def test_socket_missing_while_active_is_degraded(tmp_path: Path) -> None:
    section = health(simulated(tmp_path, NVIDIA_HOST, socket_missing))
    assert section["state"] == "degraded"
    assert section["persistencedActive"] is True and section["persistencedSocket"] is False
    assert f"{PERSISTENCED_SOCKET} is missing" in section["message"]
    assert "systemctl restart nvidia-persistenced" in section["message"]


def test_a_plain_file_is_not_the_socket(tmp_path: Path) -> None:
    root = simulated(tmp_path, NVIDIA_HOST)
    socket = root / PERSISTENCED_SOCKET.lstrip("/")
    socket.unlink()
    socket.write_text("")
    section = health(root)
    assert section["state"] == "degraded" and section["persistencedSocket"] is False
    assert "is not a socket" in section["message"]


def test_an_unbound_gpu_is_degraded(tmp_path: Path) -> None:
    section = health(simulated(tmp_path, "strix-halo-nvidia-unbound-ubuntu-26.04-ready"))
    assert section["state"] == "degraded" and section["driverBound"] is False
    assert "0000:01:00.0 is not bound to any driver" in section["message"]
    assert section["gpus"] == [{"pciAddress": "0000:01:00.0", "driver": ""}]


@pytest.mark.parametrize("scenario", ["cpu-only-ubuntu-24.04", "strix-halo-ubuntu-26.04-ready"])
def test_hosts_without_nvidia_are_absent(tmp_path: Path, scenario: str) -> None:
    section = health(simulated(tmp_path, scenario))
    assert section["state"] == "absent" and section["gpus"] == []
    assert section["driverBound"] is None and section["persistencedActive"] is None


def test_an_unreadable_socket_path_is_unknown_never_healthy(tmp_path: Path) -> None:
    root = simulated(tmp_path, NVIDIA_HOST)
    run_dir = root / "run/nvidia-persistenced"
    for item in run_dir.iterdir():
        item.unlink()
    run_dir.rmdir()
    run_dir.symlink_to("nvidia-persistenced")  # a loop: existence cannot be established
    section = health(root)
    assert section["state"] == "unknown" and section["persistencedSocket"] is None
    assert "could not be told" in section["message"]


def test_systemctl_that_cannot_tell_is_unknown(tmp_path: Path) -> None:
    from magicstick_host.collect import collect_evidence
    from magicstick_host.ports.hostfs import RootedHostFS
    from tests.collect.runners import FakeRunner

    root = simulated(tmp_path, NVIDIA_HOST)
    ev = collect_evidence(RootedHostFS(str(root)), FakeRunner(returncode=124), [])
    section = nvidia_health(ev)
    assert section["state"] == "unknown" and section["persistencedActive"] is None
    assert "could not be told" in section["message"] and "timed out" in section["message"]


def test_compute_gpus_are_no_display_host(tmp_path: Path) -> None:
    """2x H200 (3D controllers, class 0x0302) beside the BMC's VGA: no NVIDIA display host,
    so nothing of the display driver's health applies; they keep the GPU Operator's driver."""
    from magicstick_host.collect import collect_evidence
    from magicstick_host.ports.hostfs import RootedHostFS
    from tests.collect.runners import FakeRunner

    root = simulated(tmp_path, "nvidia-datacenter-ubuntu-24.04")
    section = health(root)
    assert section["state"] == "absent" and section["gpus"] == []
    assert section["driverBound"] is None and section["persistencedActive"] is None
    assert section["persistencedSocket"] is None
    assert "No NVIDIA display GPU on this host" in section["message"]
    assert "0000:41:00.0, 0000:c1:00.0" in section["message"]
    assert "GPU Operator's own driver path" in section["message"]
    runner = FakeRunner(returncode=0)
    collect_evidence(RootedHostFS(str(root)), runner, [])
    assert not [c for c in runner.calls if "nvidia-persistenced" in " ".join(c)]
