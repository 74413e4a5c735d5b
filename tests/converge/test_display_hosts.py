"""Which hosts are NVIDIA display hosts (convergence.md): an NVIDIA VGA-compatible controller,
class 0x0300. An NVIDIA 3D controller (0x0302, H100/H200) is none: it keeps the GPU Operator's
driver path. The playbook's own reading (roles/converge/files/host_facts.py, run for real as the
playbook runs it) and the worker's (collect/pci.py + domain/convergence/display.py) agree on
every simulated host.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from magicstick_host.collect.pci import collect_pci
from magicstick_host.collect.reader import Reader
from magicstick_host.domain.convergence.display import (
    is_nvidia_display,
    nvidia_compute_gpus,
    nvidia_display_gpus,
)
from magicstick_host.ports.hostfs import RootedHostFS
from magicstick_host.sim.scenarios import SCENARIOS
from magicstick_host.sim.writer import create_host
from tests.playbooks.conftest import PLAYBOOKS

HOST_FACTS = PLAYBOOKS / "roles/converge/files/host_facts.py"
DATACENTER = "nvidia-datacenter-ubuntu-24.04"


@pytest.mark.parametrize(("vendor", "pci_class", "display"), [
    ("10de", "030000", True),  # GeForce / RTX PRO: VGA-compatible
    ("10de", "030200", False),  # H100/H200: 3D controller
    ("10de", "038000", False),
    ("1a03", "030000", False),  # the BMC's VGA (ASPEED)
    ("1002", "038000", False),  # Strix Halo
])
def test_only_an_nvidia_vga_controller_is_a_display_host(
    vendor: str, pci_class: str, display: bool
) -> None:
    assert is_nvidia_display(vendor, pci_class) is display


def playbook_facts(root: Path) -> dict[str, Any]:
    """host_facts.py as the playbook runs it: `python -I -c <source> <root>`."""
    proc = subprocess.run(
        [sys.executable, "-I", "-c", HOST_FACTS.read_text(), str(root)],
        capture_output=True, text=True, timeout=60, check=True,
    )
    facts: dict[str, Any] = json.loads(proc.stdout)
    return facts


@pytest.mark.real_commands
def test_the_playbook_and_the_worker_agree_on_every_simulated_host(tmp_path: Path) -> None:
    verdicts = {}
    for name in sorted(SCENARIOS):
        root = tmp_path / name
        create_host(name, root)
        facts = playbook_facts(root)
        pci = collect_pci(Reader(RootedHostFS(str(root))))
        display = [d.address for d in nvidia_display_gpus(pci)]
        compute = [d.address for d in nvidia_compute_gpus(pci)]
        assert facts["nvidiaDisplay"] is bool(display), name
        assert facts["nvidiaCompute"] == compute, name
        verdicts[name] = (bool(display), compute)
    assert verdicts[DATACENTER] == (False, ["0000:41:00.0", "0000:c1:00.0"])
    assert verdicts["strix-halo-nvidia-ubuntu-26.04-ready"] == (True, [])
    assert verdicts["cpu-only-ubuntu-24.04"] == (False, [])
