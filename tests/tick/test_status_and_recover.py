"""`status` and `recover` at the console: a stopped worker is explained, then cleared."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from magicstick_host import app_console, schemas
from magicstick_host.cli.main import main
from magicstick_host.domain.state import State
from magicstick_host.errors import ExitCode, StateError
from magicstick_host.ports.lock import MaintenanceLock
from magicstick_host.ports.state_store import FileStateStore
from magicstick_host.sim.writer import create_host
from tests.harness.world import World
from tests.test_cli import tick_on_sim_host

NOBODY = 65534


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


# ---- hostile state directories: status names every block with a fix that works -------------


def status_in_time(
    capsys: pytest.CaptureFixture[str], state_dir: Path, node: str = "strix-01"
) -> dict[str, Any]:
    """`status --json`, which must answer (a FIFO once hung it) and validate."""
    done: list[dict[str, Any]] = []
    worker = threading.Thread(
        target=lambda: done.append(status_json(capsys, state_dir, node)), daemon=True
    )
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "status hung"
    return done[0]


def tick_runs(state_dir: Path) -> None:
    """What the tick does with the directory: load, commit a transition, open an op log."""
    store = FileStateStore(state_dir)
    store.prepare()
    with MaintenanceLock(state_dir / "maintenance.lock"):
        state = store.load() or State()
        store.commit(state, {"at": "2026-05-09T07:00:00Z", "event": "probe"})
        store.open_op_log("probe").close()


def populated(tmp_path: Path) -> Path:
    state_dir = tmp_path / "state"
    tick_runs(state_dir)
    return state_dir


def chown_nobody(path: Path) -> None:
    os.lchown(path, NOBODY, NOBODY)


def immutable(path: Path) -> None:
    from tests.ports.test_state_store import set_immutable

    set_immutable(path, True)


CASES: list[tuple[str, str, str, Any]] = [
    # (id, name under the state dir ("" = the directory), problem, how to break it)
    ("dir-mode", "", "mode", lambda p: p.chmod(0o755)),
    ("dir-file", "", "not-directory", lambda p: (shutil.rmtree(p), p.write_text("x"))),
    ("dir-symlink", "", "symlink",
     lambda p: (p.rename(p.with_name("real")), p.symlink_to(p.with_name("real")))),
    ("state-mode", "state.json", "mode", lambda p: p.chmod(0o644)),
    ("state-symlink", "state.json", "symlink",
     lambda p: (p.rename(p.with_name("x.json")), p.symlink_to(p.with_name("x.json")))),
    ("state-fifo", "state.json", "not-regular", lambda p: (p.unlink(), os.mkfifo(p, 0o600))),
    ("state-dir", "state.json", "not-regular", lambda p: (p.unlink(), p.mkdir(0o700))),
    ("journal-mode", "journal.jsonl", "mode", lambda p: p.chmod(0o640)),
    ("journal-dir", "journal.jsonl", "not-regular", lambda p: (p.unlink(), p.mkdir(0o700))),
    ("journal-symlink", "journal.jsonl", "symlink",
     lambda p: (p.unlink(), p.symlink_to("/dev/null"))),
    ("lock-symlink", "maintenance.lock", "symlink",
     lambda p: (p.unlink(), p.symlink_to("/tmp"))),
    ("lock-fifo", "maintenance.lock", "not-regular", lambda p: (p.unlink(), os.mkfifo(p))),
    ("logs-symlink", "logs", "symlink",
     lambda p: (shutil.rmtree(p), p.symlink_to("/tmp"))),
    ("logs-mode", "logs", "mode", lambda p: p.chmod(0o755)),
]
if os.geteuid() == 0:  # a foreign owner and the immutable attribute need root to set up
    CASES += [
        ("dir-owner", "", "owner", chown_nobody),
        ("state-owner", "state.json", "owner", chown_nobody),
        ("journal-owner", "journal.jsonl", "owner", chown_nobody),
        ("lock-owner", "maintenance.lock", "owner", chown_nobody),
        ("state-immutable", "state.json", "unwritable", immutable),
        ("journal-immutable", "journal.jsonl", "unwritable", immutable),
    ]


@pytest.mark.real_commands  # the advised fix is run as the administrator would run it
@pytest.mark.parametrize(("name", "problem", "breaks"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_status_names_each_block_and_its_advice_clears_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, problem: str, breaks: Any
) -> None:
    state_dir = populated(tmp_path)
    path = state_dir / name if name else state_dir
    breaks(path)
    doc = status_in_time(capsys, state_dir)
    assert [(c["path"], c["problem"]) for c in doc["conditions"]] == [(str(path), problem)]
    advice = doc["conditions"][0]["advice"]
    assert advice in doc["next"]
    code, human, _ = cli(capsys, "status", "--state-dir", str(state_dir), "--node-name", "x")
    assert code == 0 and f"BLOCKED:    {path}" in human
    with pytest.raises(StateError):  # the tick is blocked, with the fix in its message
        tick_runs(state_dir)
    command = advice.split("`")[1]
    if command.startswith("magicstick-host recover"):
        app_console.recover(str(state_dir), "strix-01")
    else:
        subprocess.run(["bash", "-c", command], check=True)
    assert status_in_time(capsys, state_dir)["conditions"] == []
    tick_runs(state_dir)


@pytest.mark.parametrize(
    "content",
    [b"[" * 100_000, b'{"schemaVersion": 1, "schemaVersion": 1, "operation": null}'],
    ids=["deep-nesting", "duplicate-key"],
)
def test_a_hostile_state_file_blocks_the_tick_and_recover_clears_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes
) -> None:
    state_dir = tmp_path / "state"
    FileStateStore(state_dir).prepare()
    (state_dir / "state.json").write_bytes(content)
    (state_dir / "state.json").chmod(0o600)
    doc = status_in_time(capsys, state_dir)  # never a crash: the reason, and what to do
    assert "not JSON" in doc["stateError"] and "recover --confirm strix-01" in doc["next"]
    code, _, err = tick_on_sim_host(capsys, tmp_path)
    assert code == ExitCode.STATE_BLOCKED and "state-corrupt" in err, err  # not 70
    (archived,) = state_dir.glob("state.json.corrupt-*")
    assert archived.read_bytes() == content
    code, _, err = tick_on_sim_host(capsys, tmp_path)
    assert code not in (ExitCode.STATE_BLOCKED, ExitCode.INTERNAL) or "stopped" in err
    code, out, err = cli(
        capsys, "recover", "--confirm", "strix-01", "--root", str(tmp_path / "h"),
        "--state-dir", str(state_dir), "--node-name", "strix-01",
    )
    assert code == 0 and "Recovered" in out, err
    state = FileStateStore(state_dir).load()
    assert state is not None and state.block is None
    code, _, err = tick_on_sim_host(capsys, tmp_path)
    assert code not in (ExitCode.STATE_BLOCKED, ExitCode.INTERNAL), err


def test_recover_moves_a_fifo_state_file_aside_and_the_tick_runs_again(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    state_dir = populated(tmp_path)
    (state_dir / "state.json").unlink()
    os.mkfifo(state_dir / "state.json", 0o600)
    code, _, err = tick_on_sim_host(capsys, tmp_path)
    assert code == ExitCode.STATE_BLOCKED and "not a regular file" in err
    assert "recover" in err  # the block names its way out
    create_host("strix-halo-ubuntu-26.04-ready", tmp_path / "h2")
    code, out, err = cli(
        capsys, "recover", "--confirm", "strix-01", "--root", str(tmp_path / "h2"),
        "--state-dir", str(state_dir), "--node-name", "strix-01",
    )
    assert code == 0 and "Moved aside" in out and "Recovered" in out, err
    (aside,) = state_dir.glob("state.json.unsafe-*")
    assert stat.S_ISFIFO(os.lstat(aside).st_mode)
    events = [e["event"] for e in FileStateStore(state_dir).read_journal()]
    assert events[-2:] == ["state-quarantined", "recovered"]
    code, _, err = tick_on_sim_host(capsys, tmp_path)
    assert code not in (ExitCode.STATE_BLOCKED, ExitCode.INTERNAL), err


def test_status_shows_a_legacy_state_as_its_migration_without_touching_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    state_dir = tmp_path / "state"
    FileStateStore(state_dir).prepare()
    legacy = (
        Path(__file__).resolve().parents[1] / "fixtures/legacy-state/reboot-scheduled-reboot.json"
    ).read_bytes()
    (state_dir / "state.json").write_bytes(legacy)
    (state_dir / "state.json").chmod(0o600)
    doc = status_in_time(capsys, state_dir)
    assert doc["legacy"] is True and doc["stateError"] == ""
    assert doc["operation"]["phase"] == "RebootScheduled"
    assert "next tick migrates it" in doc["next"]
    assert (state_dir / "state.json").read_bytes() == legacy
    assert sorted(p.name for p in state_dir.iterdir()) == ["state.json"]


def test_status_answers_at_once_with_a_fifo_in_place_of_the_state_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    state_dir = tmp_path / "state"
    FileStateStore(state_dir).prepare()
    os.mkfifo(state_dir / "state.json", 0o600)
    doc = status_in_time(capsys, state_dir)
    assert "not a regular file" in doc["stateError"]
    assert "recover --confirm strix-01" in doc["next"]
