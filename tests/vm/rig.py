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
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.vm.access import end_ssh, guest, guest_boot_id, run, write_executables, write_ssh_config
from tests.vm.cluster import REPORT, Cluster, register_node
from tests.vm.machine import (
    BOOT_TIMEOUT,
    build_image,
    choose_accelerator,
    power_cut,
    power_on,
    qemu_argv,
    wait_boot,
)
from tests.vm.rigdir import REPO, Rig, RigError, log, send_signal, wait_gone

NAMESPACE = "ai-system"
GUEST_KUBECONFIG = "/etc/rancher/k3s/k3s.yaml"
GUEST_SRC = "/root/magicstick-host"
# what install.yml copies from a checkout (its magicstick_trees, playbooks and units)
CHECKOUT_PARTS = ("magicstick_host", "profiles", "playbooks", "units")
REPORT_TIMEOUT = 240.0

# Captured at import: the test suite's subprocess guard patches subprocess.Popen per test.
_POPEN = subprocess.Popen


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
    end_ssh(rig)
    qemu = rig.qemu_running()
    if qemu is not None:
        send_signal(qemu, signal.SIGTERM)
        if wait_gone([qemu], 10):
            send_signal(qemu, signal.SIGKILL)
    runner = rig.runner_pid()
    if runner is not None:
        send_signal(runner, signal.SIGTERM)
        wait_gone([runner], 30)
    killed = []
    for pid, _argv in rig.processes():
        send_signal(pid, signal.SIGKILL)
        killed.append(pid)
    left = wait_gone(killed, 10)
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
