"""The collector never raises for host content: empty, garbage, unreadable, hostile trees."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magicstick_host.collect import collect_evidence
from magicstick_host.domain.evidence import Evidence
from magicstick_host.ports.hostfs import RootedHostFS
from tests.collect.fakehost import FakeHost, ready_strix_halo
from tests.collect.runners import FakeRunner

# files whose existence is the fact; their content is never read
EXISTENCE_ONLY = {"dev/kfd", "dev/dri/renderD128", "usr/bin/cloud-init",
                  "run/cloud-init/result.json"}


def collect(root: Path, runner: FakeRunner | None = None) -> Evidence:
    return collect_evidence(RootedHostFS(str(root)), runner or FakeRunner(), ["linux-generic"])


def _files(root: Path) -> list[str]:
    found = []
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            if not path.is_symlink():
                found.append(str(path.relative_to(root)))
    return sorted(found)


with tempfile.TemporaryDirectory() as _scratch:
    READY_FILES = _files(ready_strix_halo(Path(_scratch)).root)

def _is_read(rel: str) -> bool:
    if rel in EXISTENCE_ONLY or rel.startswith("boot/"):
        return False
    # of a non-display device only the mandatory attributes are read
    non_display = ("/0000:00:00.0/", "/0000:c5:00.1/")
    if any(d in rel for d in non_display):
        return rel.rsplit("/", 1)[1] in ("vendor", "device", "class")
    return True


READ_FILES = [f for f in READY_FILES if _is_read(f)]


def test_empty_root(tmp_path: Path) -> None:
    ev = collect(tmp_path)
    assert not ev.pci.complete and ev.pci.devices == ()
    assert ev.boot_id is None and ev.kernel.release is None
    fields = {u.field for u in ev.unknowns}
    assert {"pci", "boot_id", "kernel.release", "os", "memory.mem_total_kib",
            "packages.installed", "arch"} <= fields


@pytest.mark.parametrize("rel", READ_FILES)
@pytest.mark.parametrize("kind", ["binary", "text", "dir", "escape", "loop"])
def test_every_read_file_broken(tmp_path: Path, rel: str, kind: str) -> None:
    host = ready_strix_halo(tmp_path / "root")
    target = host.root / rel
    target.unlink()
    if kind == "binary":
        target.write_bytes(b"\xff\xfe\x00garbage")
    elif kind == "text":
        target.write_text("garbage \x00 ( GB) 0x:: = \n\n\t#")
    elif kind == "dir":
        target.mkdir()
    elif kind == "escape":
        os.symlink("../" * (rel.count("/") + 2) + "etc/passwd", target)
    else:
        os.symlink(target.name, target)
    ev = collect(host.root)
    if kind == "text" and rel in ("etc/modprobe.d/blacklist.conf", "etc/default/grub",
                                  "proc/cmdline"):
        return  # free-form formats: this garbage is just words that override nothing
    assert ev.unknowns, f"{rel} broken as {kind} went unnoticed"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(picks=st.lists(st.tuples(st.sampled_from(READY_FILES), st.binary(max_size=200)),
                      min_size=1, max_size=6))
def test_random_garbage_never_raises(picks: list[tuple[str, bytes]]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        host = ready_strix_halo(Path(scratch))
        for rel, content in picks:
            (host.root / rel).write_bytes(content)
        ev = collect(host.root, FakeRunner(returncode=127))
        assert isinstance(ev, Evidence)


def test_everything_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # tests run as root, where chmod 000 does not stop reads: deny inside the tree instead
    host = ready_strix_halo(tmp_path)
    prefix = str(host.root) + "/"
    real_open, real_listdir = os.open, os.listdir

    def denied(path: str) -> bool:
        return str(path).startswith(prefix)

    def fake_open(path: str, flags: int, *args: int) -> int:
        if denied(path):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args)

    def fake_listdir(path: str) -> list[str]:
        if denied(path):
            raise PermissionError(13, "Permission denied")
        return real_listdir(path)

    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "listdir", fake_listdir)
    ev = collect(host.root)
    assert not ev.pci.complete
    assert all("permission denied" in u.reason for u in ev.unknowns)
    assert ev.boot_id is None and ev.ttm.pages_limit is None


def test_pci_dir_is_a_file(tmp_path: Path) -> None:
    host = ready_strix_halo(tmp_path)
    shutil.rmtree(host.root / "sys/bus/pci/devices")
    host.file("/sys/bus/pci/devices", "oops")
    ev = collect(host.root)
    assert not ev.pci.complete and ev.pci.devices == ()
    assert ev.unknown("pci")[0].reason == "/sys/bus/pci/devices: not a directory"


def test_pci_device_link_escapes(tmp_path: Path) -> None:
    host = FakeHost(tmp_path / "root")
    host.link("/sys/bus/pci/devices/0000:01:00.0", "../../../../../../../../outside")
    ev = collect(host.root)
    assert not ev.pci.complete
    assert "symlink escapes root" in ev.unknown("pci")[0].reason


def test_real_root_smoke() -> None:
    # read-only; whatever this machine is, the collector must answer
    ev = collect_evidence(RootedHostFS("/"), FakeRunner(returncode=127), ["python3"])
    assert ev.arch is not None
