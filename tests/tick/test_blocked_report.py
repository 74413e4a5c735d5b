"""A stopped worker shows itself through what the dashboard reads (contract.md, "The host
report"): plan blocked and every capability unsupported, each with the block's message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from magicstick_host import schemas
from magicstick_host.cli.main import main
from magicstick_host.domain.text import MAX_MESSAGE
from magicstick_host.errors import ExitCode, MagicstickError, StateCorruptError
from tests.harness.world import World

pytestmark = pytest.mark.apiserver

READY = "strix-halo-ubuntu-26.04-ready"
SECTIONS = ("gpuMemory", "network", "modelCache")


def assert_withdrawn(report: dict[str, Any], why: str) -> None:
    assert report["plan"]["state"] == "blocked"
    assert "experiment" not in report["plan"]
    assert why in report["plan"]["message"]
    for section in SECTIONS:
        assert report[section]["supported"] is False, section
        assert why in report[section]["message"], section
    assert report["actions"] == []


def test_a_corrupt_state_withdraws_every_action_from_the_report(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, READY)
    before = world.published()
    assert before["plan"]["state"] == "ready" and before["gpuMemory"]["supported"] is True
    (world.state_dir / "state.json").write_text("{not json")
    with pytest.raises(StateCorruptError):
        world.tick()  # the corrupt file is archived and the block written (exit 4)
    world.tick()  # the blocked state publishes itself
    report = world.report()
    assert report is not None
    assert_withdrawn(report, "corrupt")
    # the dashboard's own gates: nothing is actionable
    assert report["plan"]["state"] not in ("available", "ready")
    assert report["gpuMemory"]["supported"] is not True


def test_a_removed_execution_state_withdraws_every_action(tmp_path: Path, kube: Any) -> None:
    world = World(tmp_path, kube, READY)
    created = world.create_request("reboot")
    world.tick()  # accepted and scheduled
    kube.delete_hostoperation(world.request_name, created["metadata"]["uid"])
    world.tick()  # the operation is stopped, the worker blocked
    world.clock.advance(61)
    world.tick()
    report = world.report()
    assert report is not None
    assert_withdrawn(report, "execution state was removed")
    assert report["operation"]["blocked"] == "execution-state-removed"


def deep_directory(base: Path, at_least: int = 2100) -> Path:
    """A directory whose path is longer than any message may be (PATH_MAX is 4096)."""
    path, n = base, 0
    while len(str(path)) < at_least:
        path, n = path / f"{n:02d}{'d' * 200}", n + 1
    return path


def exit_code_of_tick(world: World) -> int:
    """What `magicstick-host tick` exits with (cli/main.py: a raised error by its code)."""
    try:
        result = world.tick()
    except MagicstickError as exc:
        return int(exc.exit_code)
    assert result is not None
    return int(result.exit_code)


def test_a_corrupt_state_under_a_long_path_is_reported_clipped_and_recovered(
    tmp_path: Path, kube: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #24 N6: a ~2 kB state directory made a block message longer than the report's
    schema allows, and every tick exited 70 until `recover`."""
    world = World(tmp_path, kube, READY)
    world.state_dir = deep_directory(tmp_path / "deep")
    assert exit_code_of_tick(world) == ExitCode.OK
    (world.state_dir / "state.json").write_text("{not json")
    rejected = world.create_request("reboot")
    codes = [exit_code_of_tick(world) for _ in range(3)]
    assert ExitCode.INTERNAL not in codes
    assert codes[0] == ExitCode.STATE_BLOCKED  # archived and blocked
    # then the blocked worker publishes itself each tick (exit 0 today; 4 would do too)
    assert set(codes[1:]) <= {ExitCode.OK, ExitCode.STATE_BLOCKED}, codes

    block = world.state().block
    assert block is not None and block.code == "state-corrupt"
    assert len(block.message) == MAX_MESSAGE and block.message.endswith("…")
    assert block.archived.startswith(str(world.state_dir))  # the whole path, in its own field
    report = world.report()
    assert report is not None and schemas.errors("report", report) == []
    assert_withdrawn(report, "corrupt")
    assert report["operation"]["blocked"] == "state-corrupt"
    assert report["operation"]["message"] == block.message
    status = (world.hostop() or {})["status"]
    assert status["phase"] == "Rejected" and "stopped" in status["message"]
    assert len(status["message"]) <= MAX_MESSAGE

    code = main(["recover", "--confirm", world.node_name, "--root", str(world.root),
                 "--state-dir", str(world.state_dir), "--node-name", world.node_name])
    assert code == ExitCode.OK, capsys.readouterr().err
    assert world.state().block is None
    kube.delete_hostoperation(world.request_name, rejected["metadata"]["uid"])
    world.create_request("poweroff")
    assert exit_code_of_tick(world) == ExitCode.OK
    assert world.phase() == "PoweroffScheduled"
