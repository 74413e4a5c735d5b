"""The rig's own contract (appliance-vm.md, "The interface"): bad input is one line on stderr
and a non-zero exit, and leaves no qemu or apiserver running; the VM it brought up is what
vm.json says.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.vm.appliance import Appliance
from tests.vm.rigdir import Rig

pytestmark = pytest.mark.real_commands

REPO = Path(__file__).resolve().parents[2]


def rig_command(*args: str, env: dict[str, str] | None = None,
                user: int | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "tests.vm.rig", *args]
    if user is not None:
        # the system's python3: the development venv's interpreter may sit under /root
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups",
                "/usr/bin/python3", *argv[1:]]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def assert_one_line_refusal(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vm: "), done.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_vm_json_says_where_everything_is(appliance: Appliance) -> None:
    config = json.loads((appliance.rig.dir / "vm.json").read_text())
    for key in ("kubeconfig", "dashboardKubeconfig", "guest", "power", "console"):
        assert Path(config[key]).is_file(), key
    assert config["node"] == appliance.node and config["namespace"] == "ai-system"
    # the guest command passes stdout, stderr and the exit code through
    done = subprocess.run([config["guest"], "sh", "-c", "echo out; echo err >&2; exit 7"],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (7, "out\n", "err\n")
    done = subprocess.run([config["guest"], "systemctl", "is-active",
                           "magicstick-host-management.timer"],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "active"
    power = subprocess.run([config["power"], "state"], capture_output=True, text=True,
                           timeout=60)
    assert power.stdout.strip() == "running"
    # the accelerator said, and the disk never opened with cache=unsafe
    assert config["accelerator"] in ("kvm", "tcg")
    qemu = json.loads((appliance.rig.dir / "qemu.json").read_text())["argv"]
    drive = qemu[qemu.index("-drive") + 1]
    assert "cache=writeback" in drive and "unsafe" not in " ".join(qemu)
    assert "restrict=on" in qemu[qemu.index("-netdev") + 1]


def test_a_dir_holding_a_running_vm_is_refused_and_left_running(appliance: Appliance) -> None:
    before = sorted(pid for pid, _ in appliance.rig.processes())
    done = rig_command("up", str(appliance.rig.dir))
    assert_one_line_refusal(done, "already holds a running VM", "make vm-down")
    assert sorted(pid for pid, _ in appliance.rig.processes()) == before
    assert appliance.boot_id()


def test_without_root_nothing_starts(tmp_path: Path) -> None:
    target = tmp_path / "vm"
    done = rig_command("up", str(target), user=65534)  # nobody
    assert_one_line_refusal(done, "needs root")
    assert Rig(target).processes() == []


def test_without_go_and_no_built_apiserver_nothing_starts(tmp_path: Path) -> None:
    target = tmp_path / "vm"
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("qemu-system-x86_64", "qemu-img", "socat", "ssh"):
        (bare / tool).symlink_to(shutil.which(tool) or "/bin/false")
    done = rig_command("up", str(target), env={
        "PATH": f"{bare}:/usr/sbin:/sbin", "MAGICSTICK_CACHE_DIR": str(tmp_path / "cache")})
    assert_one_line_refusal(done, "`go` is not on PATH")
    assert Rig(target).processes() == []
    assert not (tmp_path / "cache" / "vm-image").exists(), "no image build was started"


def test_a_disk_whose_image_left_the_cache_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "vm"
    target.mkdir()
    (target / "vm.json").write_text(json.dumps({
        "node": "magicstick-vm",
        "image": {"dir": str(tmp_path / "pruned-image"), "key": "0" * 64, "kernel": "x"}}))
    (target / "qemu.json").write_text(json.dumps({"argv": ["/bin/false"]}))
    done = rig_command("power", str(target), "on")
    assert_one_line_refusal(done, "no longer in the cache", "make vm-down")
    assert Rig(target).processes() == []


def test_a_dir_of_other_files_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "vm"
    target.mkdir()
    (target / "notes.txt").write_text("mine\n")
    done = rig_command("up", str(target))
    assert_one_line_refusal(done, "not a rig's")
    assert (target / "notes.txt").read_text() == "mine\n"
    assert Rig(target).processes() == []
