"""RootedHostFS: reads under a root, symlinks resolved inside it, one typed error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from magicstick_host.ports.hostfs import HostReadError, RootedHostFS
from tests.collect.fakehost import FakeHost


@pytest.fixture
def host(tmp_path: Path) -> FakeHost:
    return FakeHost(tmp_path)


def _reason(fs: RootedHostFS, path: str, max_bytes: int = 1 << 20) -> str:
    with pytest.raises(HostReadError) as info:
        fs.read_text(path, max_bytes=max_bytes)
    assert info.value.path == path
    return info.value.reason


def test_reads_under_root_with_or_without_leading_slash(host: FakeHost) -> None:
    host.file("/etc/os-release", "ID=ubuntu\n")
    fs = RootedHostFS(str(host.root))
    assert fs.read_text("/etc/os-release") == "ID=ubuntu\n"
    assert fs.read_text("etc/os-release") == "ID=ubuntu\n"
    assert not fs.is_real_root
    assert RootedHostFS("/").is_real_root


def test_relative_and_absolute_links_stay_in_root(host: FakeHost) -> None:
    host.file("/sys/devices/pci0000:00/0000:c5:00.0/vendor", "0x1002\n")
    host.link("/sys/bus/pci/devices/0000:c5:00.0", "../../../devices/pci0000:00/0000:c5:00.0")
    host.link("/etc/abs", "/sys/devices/pci0000:00/0000:c5:00.0/vendor")
    fs = RootedHostFS(str(host.root))
    assert fs.read_text("/sys/bus/pci/devices/0000:c5:00.0/vendor") == "0x1002\n"
    assert fs.read_text("/etc/abs") == "0x1002\n"
    assert fs.list_dir("/sys/bus/pci/devices") == ["0000:c5:00.0"]
    assert fs.is_dir("/sys/bus/pci/devices/0000:c5:00.0")


def test_escape_and_loop_are_unreadable(host: FakeHost, tmp_path: Path) -> None:
    outside = tmp_path.parent / (tmp_path.name + "-outside")
    outside.mkdir()
    (outside / "secret").write_text("x")
    host.link("/etc/escape", f"../../{outside.name}/secret")
    host.link("/etc/loop", "loop")
    host.link("/etc/a", "b")
    host.link("/etc/b", "a")
    fs = RootedHostFS(str(host.root))
    assert _reason(fs, "/etc/escape") == "symlink escapes root"
    assert _reason(fs, "/etc/loop") == "symlink loop"
    assert _reason(fs, "/etc/a") == "symlink loop"
    assert _reason(fs, "/../etc") == "path escapes root"
    with pytest.raises(HostReadError):
        fs.exists("/etc/escape")
    with pytest.raises(HostReadError):
        fs.exists("/etc/loop/x")


def test_absolute_link_to_host_secret_is_rerooted(host: FakeHost) -> None:
    host.link("/etc/shadowlink", "/etc/shadow")
    fs = RootedHostFS(str(host.root))
    # /etc/shadow of the *tree*, which does not exist: never the real one
    assert _reason(fs, "/etc/shadowlink") == "missing"


def test_reasons(host: FakeHost) -> None:
    host.file("/big", "x" * 100)
    host.file("/bin.dat", b"\xff\xfe")
    host.dir("/adir")
    host.file("/afile", "x")
    os.mkfifo(host.path("/fifo"))
    fs = RootedHostFS(str(host.root))
    assert _reason(fs, "/nope") == "missing"
    assert _reason(fs, "/big", max_bytes=99) == "too large"
    assert fs.read_text("/big", max_bytes=100) == "x" * 100
    assert _reason(fs, "/bin.dat") == "not valid UTF-8"
    assert _reason(fs, "/adir") == "is a directory"
    assert _reason(fs, "/afile/x") == "not a directory"
    assert _reason(fs, "/fifo") == "not a regular file"
    with pytest.raises(HostReadError) as info:
        fs.list_dir("/afile")
    assert info.value.reason == "not a directory"
    assert not fs.exists("/afile/x")
    assert not fs.exists("/nope/deeper")
    assert not fs.is_dir("/afile")


def test_permission_denied(host: FakeHost, monkeypatch: pytest.MonkeyPatch) -> None:
    # tests run as root, where chmod 000 does not stop reads: simulate the kernel's answer
    host.file("/secret", "x")
    real_open = os.open

    def denying_open(path: str, flags: int, *args: int) -> int:
        if str(path).endswith("/secret"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", denying_open)
    fs = RootedHostFS(str(host.root))
    assert _reason(fs, "/secret") == "permission denied"


def test_readlink_basename(host: FakeHost) -> None:
    host.link("/dev0/driver", "../../../bus/pci/drivers/amdgpu")
    host.file("/dev0/notalink")
    host.link("/dev0/slash", "/")
    fs = RootedHostFS(str(host.root))
    assert fs.readlink_basename("/dev0/driver") == "amdgpu"
    assert fs.readlink_basename("/dev0/absent") is None
    assert fs.readlink_basename("/nodev/driver") is None
    with pytest.raises(HostReadError):
        fs.readlink_basename("/dev0/notalink")
    with pytest.raises(HostReadError):
        fs.readlink_basename("/dev0/slash")


def test_machine_is_a_string() -> None:
    assert RootedHostFS("/").machine()
