"""The appliance VM rig (shared/design/appliance-vm.md; README "The appliance in a box").

    python -m tests.vm.rig up DIR        make vm DIR=<dir>
    python -m tests.vm.rig down DIR      make vm-down DIR=<dir>
    python -m tests.vm.rig power DIR cut | on | state | wait-boot OLD_BOOT_ID [SECONDS]

`up` builds what is missing (the image: tests/vm/image.sh; the test apiserver: build.py), starts
the test apiserver and the VM, registers the Node, installs the worker in the guest with the
shipped playbooks/install.yml run by the guest's own ansible-playbook, and returns once the
worker's timer has published the report on the Node. Everything stays running; DIR/vm.json says
where everything is (`guest` and `power` are executables in DIR).

Bad input (not root, no Go, a DIR holding a running VM or files that are not a rig's, a disk
whose image left the cache) is one line on stderr and exit 1; a failed `up` stops whatever it
started. Everything the rig starts names DIR in its command line, and `down` ends every such
process (qemu, the apiserver, the ssh connection), so nothing outlives it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CACHE = Path(os.environ.get("MAGICSTICK_CACHE_DIR", Path.home() / ".cache" / "magicstick-host"))
NAMESPACE = "ai-system"
REPORT = "appliance.magicstick.dev/host-management"
GUEST_API = "10.0.2.100:6443"
GUEST_KUBECONFIG = "/etc/rancher/k3s/k3s.yaml"
GUEST_SRC = "/root/magicstick-host"
# what install.yml copies from a checkout (its magicstick_trees, playbooks and units)
CHECKOUT_PARTS = ("magicstick_host", "profiles", "playbooks", "units")
MEMORY_MIB = 2048
BOOT_TIMEOUT = 300.0
REPORT_TIMEOUT = 240.0
KVM_PROBE_SECONDS = 20.0

# Captured at import: the test suite's subprocess guard patches subprocess.Popen per test.
_POPEN = subprocess.Popen


class RigError(Exception):
    """One line for the person at the console; exit 1."""


def log(text: str) -> None:
    print(f"[vm] {text}", file=sys.stderr, flush=True)


# -- the files of a rig directory --------------------------------------------------------------


class Rig:
    """A rig directory and what it holds."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory.resolve()

    @property
    def vm_json(self) -> Path:
        return self.dir / "vm.json"

    @property
    def disk(self) -> Path:
        return self.dir / "disk.qcow2"

    @property
    def console(self) -> Path:
        return self.dir / "console.log"

    @property
    def qemu_pid(self) -> Path:
        return self.dir / "qemu.pid"

    @property
    def qemu_json(self) -> Path:
        return self.dir / "qemu.json"

    @property
    def ssh_config(self) -> Path:
        return self.dir / "ssh_config"

    @property
    def api_dir(self) -> Path:
        return self.dir / "apiserver"

    def kubeconfig(self, user: str) -> Path:
        return self.api_dir / f"{user}.kubeconfig"

    def config(self) -> dict[str, Any]:
        try:
            loaded = json.loads(self.vm_json.read_text())
        except (OSError, ValueError) as exc:
            raise RigError(f"{self.vm_json}: not a rig's vm.json ({exc})") from None
        if not isinstance(loaded, dict):
            raise RigError(f"{self.vm_json}: not a rig's vm.json")
        return loaded

    # -- processes ---------------------------------------------------------------------------

    def processes(self) -> list[tuple[int, list[str]]]:
        """Every process the rig started for this DIR: its command line names DIR, and it is
        qemu, ssh, the apiserver runner or the apiserver itself (never the caller's make or
        shell, whose command lines name DIR too)."""
        found = []
        marks = (str(self.dir), _control_path(self))
        ancestors = _ancestors()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) in ancestors:
                continue
            try:
                argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
            except OSError:
                continue
            if not argv or not any(mark in arg for arg in argv for mark in marks):
                continue
            exe = Path(argv[0]).name
            # ssh's shared connection retitles itself "ssh: <control path> [mux]"
            ours = (exe.startswith("qemu-system") or exe in ("ssh", "kubeserver")
                    or argv[0].startswith("ssh: ") or "tests.vm.apiserver" in argv)
            if ours:
                found.append((int(entry.name), argv))
        return found

    def qemu_running(self) -> int | None:
        for pid, argv in self.processes():
            if Path(argv[0]).name.startswith("qemu-system"):
                return pid
        return None

    def runner_pid(self) -> int | None:
        for pid, argv in self.processes():
            if "tests.vm.apiserver" in argv:
                return pid
        return None


def _ancestors() -> set[int]:
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is gone for our purposes
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True


def _wait_gone(pids: Sequence[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    left = [p for p in pids if _alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [p for p in left if _alive(p)]
    return left


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


# -- commands ------------------------------------------------------------------------------------


def run(argv: Sequence[str], *, timeout: float = 120.0, input_bytes: bytes | None = None,
        check: bool = True) -> subprocess.CompletedProcess[bytes]:
    proc = _POPEN(list(argv), stdin=subprocess.PIPE if input_bytes is not None
                  else subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(input_bytes, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise RigError(f"{shlex.join(argv)[:200]}: no answer in {timeout:.0f} s") from None
    done = subprocess.CompletedProcess(list(argv), proc.returncode, out, err)
    if check and proc.returncode != 0:
        last = (err or out).decode(errors="replace").strip().splitlines()[-1:] or [""]
        raise RigError(f"{shlex.join(argv)[:200]} exited {proc.returncode}: {last[0][:300]}")
    return done


def guest(rig: Rig, *argv: str, timeout: float = 120.0, input_bytes: bytes | None = None,
          check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """CMD as root in the guest, through the rig's ssh connection."""
    remote = shlex.join(argv)
    return run(["ssh", "-F", str(rig.ssh_config), "magicstick-vm", "--", remote],
               timeout=timeout, input_bytes=input_bytes, check=check)


def guest_boot_id(rig: Rig, timeout: float = 15.0) -> str | None:
    """This boot's ID as the guest's kernel says, or None while the guest does not answer."""
    try:
        done = guest(rig, "cat", "/proc/sys/kernel/random/boot_id", timeout=timeout, check=False)
    except RigError:
        return None
    text = done.stdout.decode(errors="replace").strip()
    return text if done.returncode == 0 and len(text) == 36 else None


# -- the cluster, as the admin -------------------------------------------------------------------


class Cluster:
    """The test apiserver as its admin (the rig registers the Node and reads the report)."""

    def __init__(self, rig: Rig) -> None:
        import yaml

        config = yaml.safe_load(rig.kubeconfig("admin").read_text())
        cluster = config["clusters"][0]["cluster"]
        self.url = cluster["server"]
        self.token = config["users"][0]["user"]["token"]
        self.context = ssl.create_default_context(cafile=cluster["certificate-authority"])

    def request(self, method: str, path: str, body: Any = None,
                content_type: str = "application/json", timeout: float = 10.0) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self.context) as resp:
                raw, status = resp.read(), resp.status
        except urllib.error.HTTPError as err:
            raw, status = err.read(), err.code
        return status, (json.loads(raw) if raw else None)

    def node(self, name: str) -> dict[str, Any] | None:
        try:
            status, body = self.request("GET", f"/api/v1/nodes/{name}")
        except (OSError, ssl.SSLError, ValueError):
            return None
        return body if status == 200 and isinstance(body, dict) else None


def register_node(cluster: Cluster, name: str) -> str:
    """The Node as K3s registers it at its first start; the guest's kubelet stand-in writes
    its boot ID and kernel (tests/vm/guest/usr/local/lib/rig/kubelet.py). Returns its UID."""
    status, body = cluster.request("POST", "/api/v1/nodes", {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"node-role.kubernetes.io/control-plane": "true"}}})
    if status not in (200, 201):
        raise RigError(f"registering Node {name}: HTTP {status}: {str(body)[:300]}")
    info = {"machineID": "0" * 32, "systemUUID": "00000000-0000-0000-0000-000000000000",
            "bootID": "", "kernelVersion": "", "osImage": "Ubuntu 26.04 LTS",
            "containerRuntimeVersion": "containerd://2.1.0-k3s1",
            "kubeletVersion": "v1.36.4+k3s1", "kubeProxyVersion": "",
            "operatingSystem": "linux", "architecture": "amd64"}
    base = {"cpu": "2", "memory": f"{MEMORY_MIB}Mi", "pods": "110"}
    status, body = cluster.request(
        "PATCH", f"/api/v1/nodes/{name}/status",
        {"status": {"nodeInfo": info, "allocatable": base, "capacity": base}},
        content_type="application/merge-patch+json")
    if status != 200:
        raise RigError(f"writing Node {name}'s status: HTTP {status}: {str(body)[:300]}")
    return str(body["metadata"]["uid"])


# -- the image and the accelerator ---------------------------------------------------------------


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
    argv = [_qemu(), "-machine", "pc", "-accel", "kvm", "-smp", "1", "-m", "512",
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


def _qemu() -> str:
    qemu = shutil.which("qemu-system-x86_64")
    if qemu is None:
        raise RigError("qemu-system-x86_64 is missing (make vm-tools installs it)")
    return qemu


# -- qemu ----------------------------------------------------------------------------------------


def qemu_argv(rig: Rig, accel: str, ssh_port: int, api_port: int) -> list[str]:
    cpu = ["-accel", "kvm", "-cpu", "host"] if accel == "kvm" else ["-accel", "tcg"]
    forward = f"cmd:socat - TCP:127.0.0.1:{api_port}"
    return [
        _qemu(), "-name", "magicstick-vm", "-machine", "pc", *cpu, "-smp", "2",
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
    _signal(pid, signal.SIGKILL)
    if _wait_gone([pid], 30):
        raise RigError(f"qemu (pid {pid}) did not end after SIGKILL")
    _end_ssh(rig)


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


# -- ssh -------------------------------------------------------------------------------------------


def _control_path(rig: Rig) -> str:
    path = str(rig.dir / "ssh.ctl")
    if len(path) < 90:  # a unix socket path: at most 107 bytes, and ssh adds a suffix
        return path
    import hashlib

    return f"/tmp/magicstick-vm-{hashlib.sha256(path.encode()).hexdigest()[:16]}.ctl"


def write_ssh_config(rig: Rig, image: Path, ssh_port: int) -> None:
    shutil.copyfile(image / "rig_key", rig.dir / "rig_key")
    (rig.dir / "rig_key").chmod(0o600)
    shutil.copyfile(image / "known_hosts", rig.dir / "known_hosts")
    rig.ssh_config.write_text(
        "# the rig's way into the appliance VM (tests/vm/rig.py): root, the rig's own key, the\n"
        "# guest's host key pinned, one connection shared by every command\n"
        "Host magicstick-vm\n"
        f"  HostName 127.0.0.1\n  Port {ssh_port}\n  User root\n"
        f"  IdentityFile {rig.dir / 'rig_key'}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {rig.dir / 'known_hosts'}\n  HostKeyAlias magicstick-vm\n"
        "  StrictHostKeyChecking yes\n  BatchMode yes\n  LogLevel ERROR\n"
        "  ConnectTimeout 10\n  ServerAliveInterval 5\n  ServerAliveCountMax 3\n"
        f"  ControlMaster auto\n  ControlPath {_control_path(rig)}\n  ControlPersist 300\n")


def _end_ssh(rig: Rig) -> None:
    if rig.ssh_config.exists():
        with contextlib.suppress(RigError):
            run(["ssh", "-F", str(rig.ssh_config), "-O", "exit", "magicstick-vm"], timeout=10,
                check=False)


def write_executables(rig: Rig) -> None:
    guest_exe = rig.dir / "guest"
    guest_exe.write_text(
        "#!/usr/bin/env bash\n"
        "# guest CMD [ARG...]: CMD as root in the appliance VM (tests/vm/rig.py); its stdout,\n"
        "# stderr and exit code pass through (255: the VM did not answer)\n"
        '[ $# -gt 0 ] || { echo "usage: $0 CMD [ARG...]" >&2; exit 2; }\n'
        f"exec ssh -F {shlex.quote(str(rig.ssh_config))} magicstick-vm -- "
        '"$(printf \'%q \' "$@")"\n')
    power_exe = rig.dir / "power"
    power_exe.write_text(
        "#!/bin/sh\n"
        "# power cut | on | state | wait-boot OLD_BOOT_ID [SECONDS] (tests/vm/rig.py)\n"
        f"cd {shlex.quote(str(REPO))} && exec env PYTHONPATH={shlex.quote(str(REPO))} "
        f"{shlex.quote(sys.executable)} -m tests.vm.rig power {shlex.quote(str(rig.dir))} "
        '"$@"\n')
    for exe in (guest_exe, power_exe):
        exe.chmod(0o755)


# -- up and down -----------------------------------------------------------------------------------


def _preflight(rig: Rig) -> None:
    if os.geteuid() != 0:
        raise RigError("make vm needs root (the image is built with debootstrap and chroot)")
    for tool, package in (("qemu-system-x86_64", "qemu-system-x86"), ("qemu-img", "qemu-utils"),
                          ("socat", "socat"), ("ssh", "openssh-client")):
        if shutil.which(tool) is None:
            raise RigError(f"{tool} is missing (package {package}; make vm-tools installs it)")
    if rig.dir.exists() and not rig.dir.is_dir():
        raise RigError(f"{rig.dir} is not a directory")
    if rig.dir.exists():
        running = rig.processes()
        if running:
            raise RigError(f"{rig.dir} already holds a running VM or apiserver (pid "
                           f"{', '.join(str(p) for p, _ in running)}): make vm-down DIR={rig.dir}")
        leftovers = [p.name for p in rig.dir.iterdir()]
        if leftovers and not rig.vm_json.exists():
            raise RigError(f"{rig.dir} holds files that are not a rig's ({', '.join(leftovers[:3])}"
                           f"...): choose an empty or new DIR")
    from tests.kubeserver import build

    try:
        build.ensure_binary()
    except build.GoMissingError:
        raise RigError("the test apiserver is built from Go modules and `go` is not on PATH "
                       "(Go 1.26 or later)") from None
    except build.BuildError as exc:
        raise RigError(f"building the test apiserver failed: {str(exc).splitlines()[0]}") from None


@contextlib.contextmanager
def _stop_on_failure(rig: Rig) -> Iterator[None]:
    try:
        yield
    except BaseException:
        stop_everything(rig, quiet=True)
        raise


def up(directory: Path) -> dict[str, Any]:
    if os.geteuid() != 0:  # before anything touches DIR
        raise RigError("make vm needs root (the image is built with debootstrap and chroot)")
    rig = Rig(directory)
    _preflight(rig)
    started = time.monotonic()
    if rig.vm_json.exists():
        log(f"replacing the stopped rig in {rig.dir}")
        for entry in rig.dir.iterdir():
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    rig.dir.mkdir(parents=True, exist_ok=True)
    image = build_image()
    built = json.loads((image / "image.json").read_text())
    node = str(built["hostname"])
    with _stop_on_failure(rig):
        runner_log = open(rig.dir / "apiserver.log", "ab")  # noqa: SIM115 - kept by the child
        runner = _POPEN([sys.executable, "-m", "tests.vm.apiserver", str(rig.api_dir)],
                        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                        stdin=subprocess.DEVNULL, stdout=runner_log, stderr=runner_log,
                        start_new_session=True)
        runner_log.close()
        accel, why = choose_accelerator(image)
        log(f"accelerator: {accel.upper()} ({why})")
        api_url = _wait_apiserver(rig, runner)
        cluster = Cluster(rig)
        node_uid = register_node(cluster, node)
        log(f"test apiserver {api_url}; Node {node} registered (uid {node_uid})")
        run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(image / "disk.raw"),
             "-F", "raw", str(rig.disk)])
        from tests.kubeserver.harness import free_port

        ssh_port = free_port()
        api_port = int(api_url.rsplit(":", 1)[1])
        argv = qemu_argv(rig, accel, ssh_port, api_port)
        rig.qemu_json.write_text(json.dumps({"argv": argv}, indent=1) + "\n")
        write_ssh_config(rig, image, ssh_port)
        write_executables(rig)
        config = {
            "schemaVersion": 1,
            "kubeconfig": str(rig.kubeconfig("admin")),
            "dashboardKubeconfig": str(rig.kubeconfig("dashboard")),
            "node": node,
            "nodeUid": node_uid,
            "namespace": NAMESPACE,
            "guest": str(rig.dir / "guest"),
            "power": str(rig.dir / "power"),
            "console": str(rig.console),
            "accelerator": accel,
            "apiserver": api_url,
            "image": {"dir": str(image), "key": built["key"], "kernel": built["kernel"]},
        }
        rig.vm_json.write_text(json.dumps(config, indent=1) + "\n")
        boot_started = time.monotonic()
        pid = power_on(rig)
        log(f"booting (qemu pid {pid}, console {rig.console})")
        boot_id = _wait_guest(rig, BOOT_TIMEOUT)
        log(f"booted in {time.monotonic() - boot_started:.0f} s (boot ID {boot_id})")
        _as_k3s_server(rig)
        install_worker(rig)
        report_started = time.monotonic()
        _wait_report(cluster, node, boot_id, REPORT_TIMEOUT)
        log(f"the worker's timer published its report on Node {node} "
            f"({time.monotonic() - report_started:.0f} s after the install)")
    log(f"ready in {time.monotonic() - started:.0f} s: {rig.vm_json}")
    return config


def _wait_apiserver(rig: Rig, runner: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 180
    ready = rig.api_dir / "ready"
    while time.monotonic() < deadline:
        if ready.exists():
            return ready.read_text().strip()
        if runner.poll() is not None:
            tail = (rig.dir / "apiserver.log").read_text(errors="replace").strip().splitlines()
            raise RigError(f"the test apiserver did not start: {(tail or [''])[-1][:300]} "
                           f"(see {rig.dir / 'apiserver.log'})")
        time.sleep(0.2)
    raise RigError(f"the test apiserver was not ready in 180 s (see {rig.dir / 'apiserver.log'})")


def _wait_guest(rig: Rig, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if rig.qemu_running() is None:
            raise RigError(f"qemu exited during the boot (see {rig.console})")
        boot = guest_boot_id(rig)
        if boot:
            return boot
        time.sleep(1.0)
    raise RigError(f"the guest did not answer in {seconds:.0f} s (see {rig.console})")


def _as_k3s_server(rig: Rig) -> None:
    """What a K3s server node has before the worker is installed: its admin kubeconfig (the
    API at 127.0.0.1:6443, where the guest's rig-apiserver.socket forwards to the host) and the
    auto-deploy directory; then the kubelet reports this boot on the Node."""
    import yaml

    config = yaml.safe_load(rig.kubeconfig("admin-cert").read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:6443"
    guest(rig, "sh", "-c", "umask 077 && mkdir -p /etc/rancher/k3s "
          f"/var/lib/rancher/k3s/server/manifests && cat > {GUEST_KUBECONFIG}",
          input_bytes=yaml.safe_dump(config).encode())
    guest(rig, "systemctl", "start", "rig-kubelet.service", timeout=120)


def checkout_tar() -> bytes:
    """The checkout's worker tree, as it is in the working tree (uncommitted edits included),
    without byte-code."""
    import io

    buffer = io.BytesIO()

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        name = Path(info.name).name
        if name == "__pycache__" or name.endswith((".pyc", ".pyo")):
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for part in CHECKOUT_PARTS:
            tar.add(REPO / part, arcname=part, filter=keep)
    return buffer.getvalue()


def install_worker(rig: Rig) -> None:
    """The shipped playbooks/install.yml, run inside the guest by its own ansible-playbook, as
    an appliance installer runs it (its defaults: the archive's packages, systemd, the K3s
    manifests), but for the convergence timer: host convergence (converge.yml every 15 min,
    minutes of ansible under TCG, holding the maintenance lock meanwhile) is not what the rig
    tests, so it is left to "the appliance's own scheduler" (magicstick_enable_converge_timer,
    roles/install/defaults)."""
    started = time.monotonic()
    log("installing the worker in the guest: ansible-playbook playbooks/install.yml")
    guest(rig, "sh", "-c", f"rm -rf {GUEST_SRC} && mkdir -p {GUEST_SRC} && "
          f"tar -xzf - -C {GUEST_SRC}", input_bytes=checkout_tar(), timeout=120)
    done = guest(rig, "sh", "-c", f"cd {GUEST_SRC} && ansible-playbook -i localhost, -c local "
                 "playbooks/install.yml -e magicstick_enable_converge_timer=false 2>&1",
                 timeout=900, check=False)
    (rig.dir / "install.log").write_bytes(done.stdout + done.stderr)
    if done.returncode != 0:
        failed = [line for line in done.stdout.decode(errors="replace").splitlines()
                  if line.startswith("fatal:")]
        raise RigError(f"install.yml failed in the guest ({(failed or ['see the log'])[0][:200]}; "
                       f"{rig.dir / 'install.log'})")
    recap = [line for line in done.stdout.decode(errors="replace").splitlines()
             if line.startswith("localhost")]
    log(f"installed in {time.monotonic() - started:.0f} s: {(recap or [''])[-1].strip()}")


def _wait_report(cluster: Cluster, node: str, boot_id: str, seconds: float) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        obj = cluster.node(node) or {}
        raw = (obj.get("metadata", {}).get("annotations") or {}).get(REPORT)
        if raw:
            with contextlib.suppress(ValueError):
                report = json.loads(raw)
                if isinstance(report, dict) and report.get("bootId") == boot_id:
                    return report
        time.sleep(2.0)
    raise RigError(f"no report of this boot on Node {node} in {seconds:.0f} s (the worker's "
                   "journal: guest journalctl -u magicstick-host-management)")


def stop_everything(rig: Rig, quiet: bool = False) -> list[int]:
    """qemu, the ssh connection and the apiserver (its runner first, so it stops the server
    cleanly), then anything of DIR still running. Returns what had to be killed."""
    _end_ssh(rig)
    qemu = rig.qemu_running()
    if qemu is not None:
        _signal(qemu, signal.SIGTERM)
        if _wait_gone([qemu], 10):
            _signal(qemu, signal.SIGKILL)
    runner = rig.runner_pid()
    if runner is not None:
        _signal(runner, signal.SIGTERM)
        _wait_gone([runner], 30)
    killed = []
    for pid, _argv in rig.processes():
        _signal(pid, signal.SIGKILL)
        killed.append(pid)
    left = _wait_gone(killed, 10)
    if left and not quiet:
        raise RigError(f"could not end pid {', '.join(map(str, left))}")
    return killed


def down(directory: Path) -> None:
    rig = Rig(directory)
    if not rig.dir.is_dir():
        raise RigError(f"{rig.dir}: no such directory")
    if not rig.vm_json.exists() and not rig.processes():
        raise RigError(f"{rig.dir} holds no rig (no vm.json)")
    killed = stop_everything(rig)
    left = rig.processes()
    if left:
        raise RigError(f"still running after vm-down: {', '.join(str(p) for p, _ in left)}")
    note = f" ({len(killed)} process(es) had to be killed)" if killed else ""
    log(f"stopped: nothing of {rig.dir} is running{note}")


# -- the command line ---------------------------------------------------------------------------


USAGE = ("usage: python -m tests.vm.rig up DIR | down DIR | "
         "power DIR cut|on|state|wait-boot OLD_BOOT_ID [SECONDS]")


def power(rig: Rig, args: list[str]) -> int:
    if not rig.vm_json.exists():
        raise RigError(f"{rig.dir} holds no rig (no vm.json): make vm DIR={rig.dir}")
    match args:
        case ["cut"]:
            power_cut(rig)
        case ["on"]:
            pid = power_on(rig)
            log(f"power on: qemu pid {pid}")
        case ["state"]:
            print("running" if rig.qemu_running() is not None else "off")
        case ["wait-boot", old, *rest] if len(rest) <= 1:
            try:
                seconds = float(rest[0]) if rest else BOOT_TIMEOUT
            except ValueError:
                raise RigError(f"wait-boot: {rest[0]!r} is not a number of seconds") from None
            print(wait_boot(rig, old, seconds))
        case _:
            print("usage: power cut | on | state | wait-boot OLD_BOOT_ID [SECONDS]",
                  file=sys.stderr)
            return 2
    return 0


def main(argv: list[str]) -> int:
    try:
        match argv:
            case ["up", directory]:
                up(Path(directory))
            case ["down", directory]:
                down(Path(directory))
            case ["power", directory, *args]:
                return power(Rig(Path(directory)), args)
            case _:
                print(USAGE, file=sys.stderr)
                return 2
    except RigError as exc:
        print(f"vm: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("vm: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
