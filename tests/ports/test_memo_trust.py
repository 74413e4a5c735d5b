"""Memos are trusted only when they are safe (issue 24 N3; architecture.md, "Hostile until
bounded"): the worker uses and writes a memo only in a directory that is not a symlink, owned by
root and writable by no one else, each file root-owned 0600; anything else is ignored and the
answer recomputed, and the worker writes nothing there. The kubeconfig memo holds the client
key and the token: a copy whose content was edited while its key was kept is not used.

Real files (the tests run as root, so a file or directory can belong to nobody, 65534)."""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from magicstick_host.collect.network import collect_network
from magicstick_host.ports.command_memo import (
    FileCommandMemo,
    console_memos,
    recall_document,
    remember_document,
    runtime_memo,
)
from magicstick_host.ports.hostfs import RootedHostFS
from magicstick_host.ports.kube import RealKube
from magicstick_host.ports.kubeconfig import load_kubeconfig
from magicstick_host.sim.runner import SimRunner
from tests.network.helpers import sim_host
from tests.network.test_netplan_memo import NetplanGone
from tests.ports.test_kube_config import document, write
from tests.ports.test_parse_memos import k3s_document

NOBODY = 65534
NETPLAN = "netplan-get.json"
REAL = "https://127.0.0.1:6443"
DECOY = "https://127.0.0.1:7443"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")


def private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700)
    os.chmod(path, 0o700)
    return path


def remembered_netplan(tmp_path: Path, run: Path) -> tuple[RootedHostFS, Path]:
    """A simulated host whose `netplan get all` the tick remembered in `run` (root, 0700)."""
    root = sim_host(tmp_path, "network-ethernet-dhcp")
    fs = RootedHostFS(str(root))
    assert collect_network(fs, SimRunner(root), FileCommandMemo(run / NETPLAN)).netplan_get
    assert collect_network(fs, NetplanGone(root), FileCommandMemo(run / NETPLAN)).netplan_get
    return fs, root


def nobody_0666(path: Path) -> None:
    os.chown(path, NOBODY, NOBODY)
    os.chmod(path, 0o666)


FILES: dict[str, Callable[[Path], None]] = {
    "owned-by-nobody": lambda p: os.chown(p, NOBODY, NOBODY),
    "nobody-0666": nobody_0666,
    "mode-0666": lambda p: os.chmod(p, 0o666),
    "mode-0644": lambda p: os.chmod(p, 0o644),
    "mode-0640": lambda p: os.chmod(p, 0o640),
    "group-owned-mode-0620": lambda p: os.chmod(p, 0o620),
}


@pytest.mark.parametrize("change", sorted(FILES))
def test_a_memo_file_not_root_0600_is_ignored_and_the_command_asked_again(
    tmp_path: Path, change: str
) -> None:
    run = private_dir(tmp_path / "run")
    fs, root = remembered_netplan(tmp_path, run)
    FILES[change](run / NETPLAN)
    again = collect_network(fs, NetplanGone(root), FileCommandMemo(run / NETPLAN))
    assert again.netplan_get is None  # not from the memo: netplan was asked (and timed out)
    assert "netplan get all: timed out" in again.problems


def symlink_to(mode: int) -> Callable[[Path, Path], Path]:
    def make(tmp_path: Path, run: Path) -> Path:
        os.chmod(run, mode)
        link = tmp_path / "runtime-link"
        link.symlink_to(run, target_is_directory=True)
        return link
    return make


def chmod_dir(mode: int, uid: int = 0) -> Callable[[Path, Path], Path]:
    def make(tmp_path: Path, run: Path) -> Path:
        os.chown(run, uid, 0)
        os.chmod(run, mode)
        return run
    return make


DIRECTORIES: dict[str, Callable[[Path, Path], Path]] = {
    "symlink-to-a-0777-dir": symlink_to(0o777),
    "symlink-to-a-0700-dir": symlink_to(0o700),
    "mode-0777": chmod_dir(0o777),
    "mode-1777": chmod_dir(0o1777),
    "mode-0775": chmod_dir(0o775),
    "mode-0730": chmod_dir(0o730),
    "mode-0702": chmod_dir(0o702),
    "owned-by-nobody-0700": chmod_dir(0o700, NOBODY),
}


@pytest.mark.parametrize("kind", sorted(DIRECTORIES))
def test_an_untrusted_runtime_directory_is_neither_used_nor_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    run = private_dir(tmp_path / "run")
    fs, root = remembered_netplan(tmp_path, run)  # a proper memo, root 0600
    monkeypatch.setenv("RUNTIME_DIRECTORY", str(DIRECTORIES[kind](tmp_path, run)))
    assert collect_network(fs, NetplanGone(root), runtime_memo(NETPLAN)).netplan_get is None

    (run / NETPLAN).unlink()
    assert collect_network(fs, SimRunner(root), runtime_memo(NETPLAN)).netplan_get
    memo = runtime_memo("kubeconfig.json")
    assert memo is not None
    load_kubeconfig(write(tmp_path, k3s_document()), memo)
    assert sorted(os.listdir(run)) == []  # nothing written where it would not be trusted


def test_the_proper_runtime_directory_is_used(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks above refuse what they should, not everything: the unit's 0700 directory."""
    run = private_dir(tmp_path / "run")
    fs, root = remembered_netplan(tmp_path, run)
    monkeypatch.setenv("RUNTIME_DIRECTORY", str(run))
    assert collect_network(fs, NetplanGone(root), runtime_memo(NETPLAN)).netplan_get
    os.chmod(run, 0o755)  # readable by others is not writable by them; the files stay 0600
    assert collect_network(fs, NetplanGone(root), runtime_memo(NETPLAN)).netplan_get


def test_a_memo_that_is_a_symlink_is_neither_used_nor_followed(tmp_path: Path) -> None:
    run = private_dir(tmp_path / "run")
    fs, root = remembered_netplan(tmp_path, run)
    elsewhere = private_dir(tmp_path / "elsewhere")
    os.replace(run / NETPLAN, elsewhere / NETPLAN)  # root 0600, in a root 0700 directory
    (run / NETPLAN).symlink_to(elsewhere / NETPLAN)
    held = (elsewhere / NETPLAN).read_bytes()
    assert collect_network(fs, NetplanGone(root), FileCommandMemo(run / NETPLAN)).netplan_get \
        is None
    collect_network(fs, SimRunner(root), FileCommandMemo(run / NETPLAN))
    assert (elsewhere / NETPLAN).read_bytes() == held  # the link's target is not written


def test_the_memos_the_worker_writes_are_root_0600_whatever_the_umask(tmp_path: Path) -> None:
    run = private_dir(tmp_path / "run")
    previous = os.umask(0o277)
    try:
        FileCommandMemo(run / "a.json").remember("k", "out")
    finally:
        os.umask(previous)
    info = os.lstat(run / "a.json")
    assert (stat.S_ISREG(info.st_mode), info.st_uid, stat.S_IMODE(info.st_mode)) == \
        (True, 0, 0o600)
    assert os.listdir(run) == ["a.json"]  # no temporary file left
    assert FileCommandMemo(run / "a.json").recall("k") == "out"


def token_document(server: str) -> dict[str, object]:
    return document(cluster={"server": server, "insecure-skip-tls-verify": True},
                    user={"token": "the-bearer-token"})


def edited_kubeconfig_memo(tmp_path: Path) -> tuple[str, FileCommandMemo]:
    """The worker's own kubeconfig memo (root 0600 in a root 0700 directory), its server
    edited to another one and its key kept."""
    path = write(tmp_path, token_document(REAL))
    memo = FileCommandMemo(private_dir(tmp_path / "run") / "kubeconfig.json")
    assert load_kubeconfig(path, memo).server == REAL
    raw = Path(memo.path).read_bytes()
    assert REAL.encode() in raw
    Path(memo.path).write_bytes(raw.replace(REAL.encode(), DECOY.encode()))
    return path, memo


def test_an_edited_kubeconfig_memo_that_kept_its_key_is_not_used(tmp_path: Path) -> None:
    path, memo = edited_kubeconfig_memo(tmp_path)
    assert stat.S_IMODE(os.lstat(memo.path).st_mode) == 0o600
    config = load_kubeconfig(path, memo)
    assert (config.server, config.port, config.token) == (REAL, 6443, "the-bearer-token")
    # what the transport is built with: the calls, and the token, go to the real server
    kube = RealKube(path, kubeconfig_memo=memo, transport="lean")
    wire = kube._transport()
    assert (wire.config.host, wire.config.port) == ("127.0.0.1", 6443)  # type: ignore[attr-defined]


def test_a_kubeconfig_memo_in_the_old_format_is_not_used(tmp_path: Path) -> None:
    """A memo written with the key alone (no seal), as anyone who read the key could."""
    from hashlib import sha256

    from magicstick_host.ports.kubeconfig import PARSE_VERSION

    path = write(tmp_path, k3s_document(REAL))
    decoy = k3s_document(DECOY)
    memo = FileCommandMemo(private_dir(tmp_path / "run") / "kubeconfig.json")
    digest = sha256(Path(path).read_bytes()).hexdigest()
    memo.remember(f"{PARSE_VERSION}:{digest}", json.dumps(decoy))
    assert load_kubeconfig(path, memo).server == REAL


def test_the_console_does_not_read_a_memo_others_could_have_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = private_dir(tmp_path / "run")
    FileCommandMemo(run / "dpkg-status.json").remember("k", "out")
    monkeypatch.setenv("RUNTIME_DIRECTORY", str(run))
    memo = console_memos("/")("dpkg-status.json")
    assert memo is not None and memo.recall("k") == "out"
    os.chmod(run / "dpkg-status.json", 0o666)
    assert memo.recall("k") is None
    os.chmod(run / "dpkg-status.json", 0o600)
    os.chown(run / "dpkg-status.json", NOBODY, NOBODY)
    assert memo.recall("k") is None
    os.chown(run / "dpkg-status.json", 0, 0)
    assert memo.recall("k") == "out"
    os.chmod(run, 0o770)  # made writable after the console looked at it
    assert memo.recall("k") is None


BODIES: dict[str, Callable[[float], bytes]] = {
    "nested-200000-deep": lambda now: b"[" * 200_000,
    "a-duplicate-key": lambda now: json.dumps(
        {"version": 1, "key": "other", "at": now, "output": "planted"}
    ).encode().replace(b'"output"', b'"key": "k", "output"', 1),
    "a-lone-surrogate": lambda now: json.dumps(
        {"version": 1, "key": "k", "at": now, "output": "\ud800"}).encode(),
}


@pytest.mark.parametrize("body", sorted(BODIES))
def test_a_memo_the_bounded_decoder_refuses_is_ignored(tmp_path: Path, body: str) -> None:
    run = private_dir(tmp_path / "run")
    memo = FileCommandMemo(run / "m.json")
    memo.remember("k", "out")
    Path(memo.path).write_bytes(BODIES[body](time.time()))
    assert memo.recall("k") is None


def test_a_fifo_in_place_of_a_memo_does_not_block_the_tick(tmp_path: Path) -> None:
    run = private_dir(tmp_path / "run")
    os.mkfifo(run / "m.json", 0o600)
    answers: list[str | None] = []
    reader = threading.Thread(target=lambda: answers.append(
        FileCommandMemo(run / "m.json").recall("k")), daemon=True)
    reader.start()
    reader.join(5)
    try:
        assert not reader.is_alive() and answers == [None]
    finally:
        if reader.is_alive():  # release the blocked open
            os.close(os.open(run / "m.json", os.O_WRONLY | os.O_NONBLOCK))


def test_a_remembered_document_nested_too_deeply_is_recomputed(tmp_path: Path) -> None:
    memo = FileCommandMemo(private_dir(tmp_path / "run") / "m.json")
    memo.remember("k", "[" * 100_000 + "]" * 100_000)
    assert recall_document(memo, "k") == (False, None)
    remember_document(memo, "k", {"a": [1]})
    assert recall_document(memo, "k") == (True, {"a": [1]})
