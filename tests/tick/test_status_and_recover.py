"""`status` and `recover` at the console: a stopped worker is explained, then cleared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from magicstick_host import schemas
from magicstick_host.cli.main import main
from magicstick_host.errors import ExitCode
from magicstick_host.ports.state_store import FileStateStore
from magicstick_host.sim.writer import create_host
from tests.harness.world import World


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def status_json(capsys: pytest.CaptureFixture[str], state_dir: Path, node: str) -> dict[str, Any]:
    code, out, err = cli(
        capsys, "status", "--json", "--state-dir", str(state_dir), "--node-name", node
    )
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    assert schemas.errors("status", doc) == []
    return doc


def test_status_of_a_fresh_host_says_there_is_nothing_to_do(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = status_json(capsys, tmp_path / "state", "strix-01")
    assert doc["operation"] is None and "Nothing to do" in doc["next"]


@pytest.mark.apiserver
def test_a_removed_request_is_explained_then_recovered(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, "strix-halo-ubuntu-26.04-ready")
    created = world.create_request("reboot")
    world.tick()
    kube.delete_hostoperation(world.request_name, created["metadata"]["uid"])
    world.tick()
    doc = status_json(capsys, world.state_dir, world.node_name)
    assert doc["block"]["code"] == "execution-state-removed"
    assert f"recover --confirm {world.node_name}" in doc["next"]
    assert doc["operation"]["rebootsUsed"] == 1 and doc["operation"]["rebootBudget"] == 1

    code, _, err = cli(
        capsys,
        "recover",
        "--confirm",
        "someone-else",
        "--root",
        str(world.root),
        "--state-dir",
        str(world.state_dir),
        "--node-name",
        world.node_name,
    )
    assert code == ExitCode.BAD_INPUT and "does not match" in err
    assert world.state().block is not None

    code, out, err = cli(
        capsys,
        "recover",
        "--confirm",
        world.node_name,
        "--root",
        str(world.root),
        "--state-dir",
        str(world.state_dir),
        "--node-name",
        world.node_name,
    )
    assert code == 0, err
    assert "Plan:" in out and "Recovered" in out
    state = world.state()
    assert state.block is None and state.operation is None
    recovered = [e for e in world.journal() if e["event"] == "recovered"]
    assert recovered and recovered[0]["operation"]["requestId"] == created["spec"]["requestId"]
    # the earlier restart still happens (nothing cancels it); then the worker takes requests
    world.boot()
    world.create_request("poweroff")
    world.tick()
    assert world.phase() == "PoweroffScheduled"


def test_a_corrupt_state_is_archived_blocks_the_worker_and_recover_clears_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root, state_dir = tmp_path / "host", tmp_path / "state"
    create_host("strix-halo-ubuntu-26.04-ready", root)
    store = FileStateStore(state_dir)
    store.prepare()
    store.state_path.write_text('{"schemaVersion": 1, "operation": ')
    store.state_path.chmod(0o600)
    doc = status_json(capsys, state_dir, "strix-01")
    assert doc["stateError"] and "not JSON" in doc["stateError"]
    assert store.state_path.read_text().startswith('{"schemaVersion": 1, "operation": ')

    code, _, err = cli(
        capsys,
        "recover",
        "--confirm",
        "strix-01",
        "--root",
        str(root),
        "--state-dir",
        str(state_dir),
        "--node-name",
        "strix-01",
    )
    assert code == 0, err
    archived = list(state_dir.glob("state.json.corrupt-*"))
    assert len(archived) == 1
    assert archived[0].read_text() == '{"schemaVersion": 1, "operation": '
    state = store.load()
    assert state is not None and state.block is None
    events = [e["event"] for e in store.read_journal()]
    assert "state-corrupt" in events and events[-1] == "recovered"


def test_recover_with_nothing_stopped_changes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = tmp_path / "host"
    create_host("cpu-only-ubuntu-24.04", root)
    code, out, _ = cli(
        capsys,
        "recover",
        "--confirm",
        "strix-01",
        "--root",
        str(root),
        "--state-dir",
        str(tmp_path / "state"),
        "--node-name",
        "strix-01",
    )
    assert code == 0 and "Nothing to recover" in out
