"""The console inspect reads the timer's memos and never writes them, and does not read the
network it does not report (issue 15)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from magicstick_host import app
from magicstick_host.ports.command_memo import FileCommandMemo
from magicstick_host.sim.runner import SimRunner
from magicstick_host.sim.writer import create_host


def memo_keys(run: Path) -> dict[str, str]:
    return {p.name: json.loads(p.read_text())["key"] for p in sorted(run.iterdir())}


def test_inspect_uses_the_timers_dpkg_memo_and_leaves_the_directory_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "host"
    create_host("strix-halo-ubuntu-26.04-ready", root)
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    plain = app.inspect_host(str(root), None)
    # what a tick of the timer leaves: the parse of this very status file, remembered
    app.gather(str(root), app.profiles_from(None), memo_for=lambda n: FileCommandMemo(run / n))
    memo = run / "dpkg-status.json"
    held = json.loads(memo.read_text())
    remembered = json.loads(held["output"])
    kernel = next(name for name in remembered["versions"] if name.startswith("linux-image-"))
    remembered["versions"][kernel] = ["0.0-memo"]  # so the test can tell where it came from
    held["output"] = json.dumps(remembered)
    memo.write_text(json.dumps(held))
    before = {p.name: p.read_bytes() for p in run.iterdir()}

    monkeypatch.setenv("RUNTIME_DIRECTORY", str(run))
    doc = app.inspect_host(str(root), None)
    assert "0.0-memo" in json.dumps(doc)
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before  # nothing written

    (root / "var/lib/dpkg/status").write_text(
        (root / "var/lib/dpkg/status").read_text() + "\n")  # new bytes: the memo is not used
    assert "0.0-memo" not in json.dumps(app.inspect_host(str(root), None))
    monkeypatch.delenv("RUNTIME_DIRECTORY")
    assert "0.0-memo" not in json.dumps(plain)


def test_inspect_runs_no_network_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "host"
    create_host("network-wifi-cluster", root)
    ran: list[str] = []

    class Recording(SimRunner):
        def run(self, argv, **kwargs):  # type: ignore[no-untyped-def]
            ran.append(argv[0])
            return super().run(argv, **kwargs)

    monkeypatch.setattr(app, "query_runner", lambda r: Recording(Path(r)))
    app.gather(str(root), app.profiles_from(None))
    assert {"ip", "netplan"} <= set(ran)  # what the tick's gathering runs
    ran.clear()
    app.inspect_host(str(root), None)
    assert not {"ip", "iw", "netplan"} & set(ran)
