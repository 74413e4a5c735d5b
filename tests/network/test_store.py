"""The network trial's files in the state directory: the id key (created once, 0600), the
trial record (schema-checked, atomic), the settings file (0600, removed), the backup (complete
or absent), and the trial lock."""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest

from magicstick_host.domain.network.trial import BackedUpFile, new_trial
from magicstick_host.errors import LockBusyError
from magicstick_host.ports.host_files import HostFile
from magicstick_host.ports.network_store import NetworkStore, NetworkStoreError
from tests.network.helpers import FakeClock


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_the_id_key_is_created_once_0600(tmp_path: Path) -> None:
    store = NetworkStore(tmp_path / "state")
    assert store.read_id_key() is None
    key = store.id_key()
    assert len(key) == 32 and store.id_key() == key == NetworkStore(tmp_path / "state").id_key()
    assert mode(store.directory / "id.key") == 0o600 and mode(store.directory) == 0o700
    (store.directory / "id.key").write_bytes(b"short")
    with pytest.raises(NetworkStoreError, match="not 32 bytes"):
        store.read_id_key()


def test_unsafe_files_are_refused(tmp_path: Path) -> None:
    store = NetworkStore(tmp_path / "state")
    store.id_key()
    os.chmod(store.directory / "id.key", 0o644)
    with pytest.raises(NetworkStoreError, match="too open"):
        store.read_id_key()
    (store.directory / "id.key").unlink()
    (store.directory / "id.key").symlink_to("/etc/hostname")
    with pytest.raises(NetworkStoreError, match="symlink"):
        store.read_id_key()


def trial_record() -> object:
    return new_trial(request_id="a" * 32, request_uid="uid", boot_id="b",
                     settings={"interface": "enp2s0", "kind": "ethernet", "mode": "dhcp",
                               "address": "", "gateway": "", "dns": [], "metric": 100},
                     backup=[BackedUpFile("50-cloud-init.yaml", "0" * 64, 0o600)],
                     cluster_addresses=["192.168.1.50"], wall=FakeClock().wall)


def test_the_trial_record_round_trips_and_is_schema_checked(tmp_path: Path) -> None:
    store = NetworkStore(tmp_path / "state")
    assert store.load_trial() is None
    record = trial_record()
    store.save_trial(record)  # type: ignore[arg-type]
    assert store.load_trial() == record
    assert mode(store.directory / "trial.json") == 0o600
    (store.directory / "trial.json").write_text('{"schemaVersion": 1}')
    with pytest.raises(NetworkStoreError, match="schema"):
        store.load_trial()
    (store.directory / "trial.json").write_text('{"a": 1, "a": 2}')
    with pytest.raises(NetworkStoreError, match="not JSON"):
        store.load_trial()
    store.remove_trial()
    assert store.load_trial() is None


def test_the_settings_file_is_0600_and_removed(tmp_path: Path) -> None:
    store = NetworkStore(tmp_path / "state")
    store.write_settings({"password": "hunter2hunter2"})
    path = store.directory / "settings.json"
    assert mode(path) == 0o600 and store.read_settings() == {"password": "hunter2hunter2"}
    store.remove_settings()
    assert not path.exists() and store.read_settings() is None
    assert not [p for p in store.directory.iterdir() if "hunter2" in p.read_text(errors="ignore")
                and p.is_file()]


def test_the_backup_is_complete_or_absent(tmp_path: Path) -> None:
    store = NetworkStore(tmp_path / "state")
    files = [HostFile("01-a.yaml", b"a", 0o600), HostFile("02-b.yaml", b"b", 0o644)]
    store.save_backup(files)
    assert store.load_backup(["01-a.yaml", "02-b.yaml"]) == {"01-a.yaml": b"a",
                                                             "02-b.yaml": b"b"}
    assert all(mode(p) == 0o600 for p in store.backup_path.iterdir())
    (store.directory / "backup.partial-left").mkdir()
    store.save_backup([HostFile("03-c.yaml", b"c", 0o600)])  # replaces, sweeps leftovers
    assert sorted(p.name for p in store.directory.iterdir()) == ["backup"]
    with pytest.raises(NetworkStoreError, match="missing from the backup"):
        store.load_backup(["01-a.yaml"])
    store.drop_backup()
    with pytest.raises(NetworkStoreError, match="missing"):
        store.load_backup([])


def test_the_trial_lock_excludes_and_times_out(tmp_path: Path) -> None:
    store = NetworkStore(tmp_path / "state")
    held = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with NetworkStore(tmp_path / "state").lock(wait_s=1):
            held.set()
            release.wait(5)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(5)
    started = time.monotonic()
    with pytest.raises(LockBusyError), store.lock(wait_s=0.3):
        pass
    assert time.monotonic() - started >= 0.3
    release.set()
    thread.join()
    with store.lock(wait_s=0.3):
        pass


def test_the_last_scan_is_kept(tmp_path: Path) -> None:
    store = NetworkStore(tmp_path / "state")
    assert store.load_scan() is None
    scan = {"interface": "wlp3s0", "observedAt": "2026-12-01T10:00:00Z",
            "networks": [{"ssid": "Home", "signal": -48, "security": "secured"}]}
    store.save_scan(scan)
    assert store.load_scan() == scan
    with pytest.raises(ValueError):
        store.save_scan({"interface": "wlp3s0"})
    (store.directory / "scan.json").write_text("garbage")
    assert store.load_scan() is None
