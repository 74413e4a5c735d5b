"""The tick remembers `netplan get all` by the netplan files it merges (ports/command_memo.py):
unchanged files give the same configuration without running netplan; a changed file, an old
memo or a corrupt one make netplan answer again (issue 15)."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

from magicstick_host.collect.network import collect_network
from magicstick_host.ports.command_memo import FileCommandMemo, runtime_memo
from magicstick_host.ports.hostfs import RootedHostFS
from magicstick_host.ports.runner import TIMED_OUT, CommandResult
from magicstick_host.sim.runner import SimRunner
from tests.network.helpers import HOME_PASSPHRASE, sim_host


class NetplanGone:
    """The simulated host, except that `netplan` no longer answers."""

    def __init__(self, root: Path) -> None:
        self.inner = SimRunner(root)

    def run(self, argv, *, timeout, env=None, stdout_path=None):  # type: ignore[no-untyped-def]
        if argv[0] == "netplan":
            return CommandResult(tuple(argv), TIMED_OUT, "", "timed out")
        return self.inner.run(argv, timeout=timeout)


def test_unchanged_files_reuse_the_answer_and_a_changed_file_asks_again(tmp_path: Path) -> None:
    root = sim_host(tmp_path, "network-wifi-cluster")
    memo = FileCommandMemo(tmp_path / "run" / "netplan-get.json")
    (tmp_path / "run").mkdir(mode=0o700)
    fs = RootedHostFS(str(root))
    first = collect_network(fs, SimRunner(root), memo)
    assert first.netplan_get is not None
    assert stat.S_IMODE(os.lstat(memo.path).st_mode) == 0o600

    again = collect_network(fs, NetplanGone(root), memo)
    assert again.netplan_get == first.netplan_get and again.problems == ()

    managed = sorted((root / "etc/netplan").glob("*.yaml"))[0]
    managed.write_text(managed.read_text() + "\n# touched\n")
    changed = collect_network(fs, NetplanGone(root), memo)
    assert changed.netplan_get is None
    assert "netplan get all: timed out" in changed.problems


def test_an_old_or_corrupt_memo_is_asked_again(tmp_path: Path) -> None:
    root = sim_host(tmp_path, "network-ethernet-dhcp")
    fs = RootedHostFS(str(root))
    path = tmp_path / "netplan-get.json"
    collect_network(fs, SimRunner(root), FileCommandMemo(path))
    doc = json.loads(path.read_text())
    doc["at"] = time.time() - 7200
    path.write_text(json.dumps(doc))
    assert collect_network(fs, NetplanGone(root), FileCommandMemo(path)).netplan_get is None
    path.write_text("{not json")
    assert collect_network(fs, NetplanGone(root), FileCommandMemo(path)).netplan_get is None
    assert collect_network(fs, SimRunner(root), FileCommandMemo(path)).netplan_get is not None


def test_the_memo_lives_only_in_the_runtime_directory(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """It holds Wi-Fi keys (netplan prints them): never in the state directory."""
    monkeypatch.delenv("RUNTIME_DIRECTORY", raising=False)
    assert runtime_memo("netplan-get.json") is None
    monkeypatch.setenv("RUNTIME_DIRECTORY", f"{tmp_path}/run:{tmp_path}/other")
    memo = runtime_memo("netplan-get.json")
    assert memo is not None and memo.path == str(tmp_path / "run" / "netplan-get.json")
    assert HOME_PASSPHRASE  # the scenario's key, which the memo may hold on the tmpfs only


def test_a_runtime_directory_others_can_write_is_not_trusted(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from magicstick_host.ports.command_memo import console_memos

    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    monkeypatch.setenv("RUNTIME_DIRECTORY", str(run))
    memo = console_memos("/")("netplan-get.json")
    assert memo is not None
    memo.remember("k", "output")
    assert list(run.iterdir()) == []  # read-only
    os.chmod(run, 0o777)
    assert console_memos("/")("netplan-get.json") is None
    os.chmod(run, 0o700)
    link = tmp_path / "link"
    link.symlink_to(run)
    monkeypatch.setenv("RUNTIME_DIRECTORY", str(link))
    assert console_memos("/")("netplan-get.json") is None
    monkeypatch.delenv("RUNTIME_DIRECTORY")
    assert console_memos(str(tmp_path))("netplan-get.json") is None  # a simulated root
