"""The virtual machine (tests/vm): its image, the accelerator, qemu's command line, and power:
on, cut, and the wait for a new boot.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.vm.access import end_ssh, guest_boot_id, run
from tests.vm.cluster import MEMORY_MIB, Cluster
from tests.vm.rigdir import CACHE, HERE, Rig, RigError, log, send_signal, wait_gone

GUEST_API = "10.0.2.100:6443"
BOOT_TIMEOUT = 300.0
KVM_PROBE_SECONDS = 20.0

# Captured at import: the test suite's subprocess guard patches subprocess.Popen per test.
_POPEN = subprocess.Popen


def build_image() -> Path:
    started = time.monotonic()
    proc = _POPEN([str(HERE / "image.sh"), "build"], stdin=subprocess.DEVNULL,
                  stdout=subprocess.PIPE, stderr=None)
    out, _ = proc.communicate()
    if proc.returncode != 0:
        raise RigError("building the VM image failed (tests/vm/image.sh build: its reason above)")
    image = Path(out.decode().strip().splitlines()[-1])
    log(f"image {image.name[:12]}… ({time.monotonic() - started:.0f} s): {image}")
    return image


def image_key() -> str:
    return run([str(HERE / "image.sh"), "key"]).stdout.decode().strip()


def choose_accelerator(image: Path) -> tuple[str, str]:
    """("kvm" | "tcg", why). KVM only where a guest really runs under it: on these machines
    /dev/kvm opens but a nested guest hangs before its kernel prints anything. The verdict is
    kept for this host's boot; MAGICSTICK_VM_ACCEL=kvm|tcg decides without a probe."""
    forced = os.environ.get("MAGICSTICK_VM_ACCEL", "")
    if forced in ("kvm", "tcg"):
        return forced, "MAGICSTICK_VM_ACCEL"
    if forced:
        raise RigError(f"MAGICSTICK_VM_ACCEL={forced!r}: kvm or tcg")
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg", "no usable /dev/kvm"
    host_boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    verdict_file = CACHE / "vm-accel.json"
    with contextlib.suppress(OSError, ValueError):
        verdict = json.loads(verdict_file.read_text())
        if verdict.get("hostBootId") == host_boot:
            return str(verdict["accel"]), str(verdict["why"]) + " (probed earlier this boot)"
    accel, why = _probe_kvm(image)
    CACHE.mkdir(parents=True, exist_ok=True)
    verdict_file.write_text(json.dumps({"hostBootId": host_boot, "accel": accel, "why": why}))
    return accel, why


def _probe_kvm(image: Path) -> tuple[str, str]:
    probe_log = CACHE / f"vm-kvm-probe.{os.getpid()}.log"
    argv = [qemu_binary(), "-machine", "pc", "-accel", "kvm", "-smp", "1", "-m", "512",
            "-display", "none", "-snapshot", "-net", "none",
            "-drive", f"file={image / 'disk.raw'},if=virtio,format=raw,readonly=on",
            "-chardev", f"file,id=console,path={probe_log}", "-serial", "chardev:console"]
    proc = _POPEN(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                  stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + KVM_PROBE_SECONDS
    started = False
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(OSError):
                if b"Linux version" in probe_log.read_bytes():
                    started = True
                    break
            time.sleep(0.5)
    finally:
        proc.kill()
        proc.wait()
        probe_log.unlink(missing_ok=True)
    if started:
        return "kvm", "a guest's kernel started under KVM"
    return "tcg", (f"/dev/kvm opens, but a guest's kernel did not start under it in "
                   f"{KVM_PROBE_SECONDS:.0f} s (nested KVM)")


def qemu_binary() -> str:
    qemu = shutil.which("qemu-system-x86_64")
    if qemu is None:
        raise RigError("qemu-system-x86_64 is missing (make vm-tools installs it)")
    return qemu


def qemu_argv(rig: Rig, accel: str, ssh_port: int, api_port: int) -> list[str]:
    cpu = ["-accel", "kvm", "-cpu", "host"] if accel == "kvm" else ["-accel", "tcg"]
    forward = f"cmd:socat - TCP:127.0.0.1:{api_port}"
    return [
        qemu_binary(), "-name", "magicstick-vm", "-machine", "pc", *cpu, "-smp", "2",
        "-m", str(MEMORY_MIB), "-display", "none", "-vga", "std", "-monitor", "none",
        # writeback: a guest's flush reaches the host file, nothing else does; a power cut
        # (SIGKILL) loses what the guest had not flushed. Never cache=unsafe, which ignores the
        # guest's flushes.
        "-drive", f"file={rig.disk},if=virtio,format=qcow2,cache=writeback",
        # the guest reaches only the host's test apiserver (restrict=on: nothing else)
        "-netdev", (f"user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:{ssh_port}-:22,"
                    f"guestfwd=tcp:{GUEST_API}-{forward}"),
        "-device", "virtio-net-pci,netdev=net0,mac=52:54:00:12:34:56",
        "-chardev", f"file,id=console,path={rig.console},append=on",
        "-serial", "chardev:console",
        "-pidfile", str(rig.qemu_pid), "-daemonize",
    ]


def check_disk_image(rig: Rig) -> None:
    """A disk is an overlay of one cached image: refuse it when that image left the cache or
    is no longer the one it was made from (a stale image)."""
    config = rig.config()
    image = Path(config["image"]["dir"])
    try:
        built = json.loads((image / "image.json").read_text())
    except (OSError, ValueError):
        raise RigError(f"{rig.disk} was made from the image {image}, which is no longer in the "
                       f"cache: make vm-down DIR={rig.dir}, then make vm again") from None
    if built.get("key") != config["image"]["key"]:
        raise RigError(f"{rig.disk} was made from another build of {image}: make vm-down "
                       f"DIR={rig.dir}, then make vm again")


def power_on(rig: Rig) -> int:
    if (pid := rig.qemu_running()) is not None:
        raise RigError(f"the VM of {rig.dir} is already running (qemu pid {pid})")
    check_disk_image(rig)
    argv = json.loads(rig.qemu_json.read_text())["argv"]
    rig.qemu_pid.unlink(missing_ok=True)
    run(argv, timeout=60)
    pid = int(rig.qemu_pid.read_text().strip())
    return pid


def power_cut(rig: Rig) -> None:
    """Power loss: qemu killed at once, so whatever the guest had not flushed to its disk is
    lost. The ssh connection ends with it."""
    pid = rig.qemu_running()
    if pid is None:
        return
    send_signal(pid, signal.SIGKILL)
    if wait_gone([pid], 30):
        raise RigError(f"qemu (pid {pid}) did not end after SIGKILL")
    end_ssh(rig)


def wait_boot(rig: Rig, old_boot_id: str, seconds: float) -> str:
    """Until the VM runs with another boot ID than OLD and the Node's nodeInfo says so (as
    cloud-init's tests do: a guest that answers may still be the old boot)."""
    deadline = time.monotonic() + seconds
    cluster = Cluster(rig)
    node = rig.config()["node"]
    seen = ""
    while time.monotonic() < deadline:
        if rig.qemu_running() is not None:
            boot = guest_boot_id(rig, timeout=min(15.0, max(1.0, deadline - time.monotonic())))
            if boot and boot != old_boot_id:
                seen = boot
                obj = cluster.node(node) or {}
                if (obj.get("status") or {}).get("nodeInfo", {}).get("bootID") == boot:
                    return boot
        time.sleep(1.0)
    state = "off" if rig.qemu_running() is None else "running"
    if seen:
        raise RigError(f"the VM booted ({seen}) but the Node's nodeInfo does not say so after "
                       f"{seconds:.0f} s")
    raise RigError(f"no new boot after {old_boot_id} in {seconds:.0f} s (power: {state})")
