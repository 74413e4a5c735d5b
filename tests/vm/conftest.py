"""The appliance VM's scenarios (make test-vm): one VM, brought up once by the rig as `make vm`
does and shared by the scenarios in order, then stopped as `make vm-down` does.

Like systemd's integration tests: every scenario has a hard timeout (`vm_budget`, seconds), and
when one fails the guest's journal and the console log are kept beside the rig's directory and
their paths printed. MAGICSTICK_VM_DIR=<dir> keeps the rig in that directory (it is stopped at
the end all the same).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from tests.vm import rig as rigmod
from tests.vm.access import guest
from tests.vm.appliance import Appliance
from tests.vm.rigdir import Rig, RigError

pytestmark = pytest.mark.real_commands


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "vm_budget(seconds): a scenario's hard timeout")


@pytest.fixture(scope="session")
def appliance(tmp_path_factory: pytest.TempPathFactory,
              request: pytest.FixtureRequest) -> Iterator[Appliance]:
    if os.geteuid() != 0:
        pytest.fail("the appliance VM needs root (make test-vm)", pytrace=False)
    directory = Path(os.environ.get("MAGICSTICK_VM_DIR") or tmp_path_factory.mktemp("vm"))
    try:
        rigmod.up(directory)
    except RigError as exc:
        pytest.fail(f"the rig did not come up: {exc}", pytrace=False)
    try:
        yield Appliance(directory)
    finally:
        if request.session.testsfailed:
            keep_evidence(directory)
        rigmod.down(directory)


def keep_evidence(directory: Path) -> None:
    """The guest's whole journal (every boot) next to the console log, for the failure."""
    rig = Rig(directory)
    target = directory / "journal.txt"
    if rig.qemu_running() is not None:
        try:
            done = guest(rig, "journalctl", "--no-pager", "-o", "short-monotonic",
                                timeout=120, check=False)
            target.write_bytes(done.stdout)
        except RigError as exc:
            target.write_text(f"the journal could not be read: {exc}\n")
    print(f"\n[vm] kept for the failure: {target}, {rig.console}, {directory}",
          file=sys.stderr)


class ScenarioTimeout(Exception):
    pass


@pytest.fixture(autouse=True)
def vm_budget(request: pytest.FixtureRequest) -> Iterator[None]:
    """A hard timeout per scenario (a stuck qemu once ran 6 hours in systemd's CI)."""
    marker = request.node.get_closest_marker("vm_budget")
    seconds = int(marker.args[0]) if marker else 600

    def expired(signum: int, frame: FrameType | None) -> None:
        raise ScenarioTimeout(f"{request.node.name} ran over its {seconds} s budget")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
