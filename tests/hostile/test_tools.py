"""Family 4: the tools the real executor runs hang, flood, fork or die by a signal.

Where this is safe: `--executor real` needs `--root /` (app.executor_runner), so the tick acts
on this machine. It is run only as an idle tick, whose only commands are read-only queries
(collect/network.py: `ip -j address show`, `ip -j -4 route show default`, `netplan get all`;
collect/nvidia.py: `systemctl is-active nvidia-persistenced` on an NVIDIA host; `iw dev X link`
for a Wi-Fi card), and it is kept idle whatever happens:
- PATH holds only this case's fake tools: every command the tick could run resolves to a fake,
  and the ones that change a host (`shutdown`, `ansible-playbook`, `netplan apply`,
  `systemctl stop`, `systemd-run`, `modprobe`, ...) are guards that only record that they ran
  (a guard that ran fails the case);
- the proxy answers every HostOperation request itself (404 for a read, 403 for a write) and
  every Secret list with an empty list, so no request can ever reach the tick; the Node is a
  fresh one of this case;
- the state directory and $RUNTIME_DIRECTORY are the case's own temporary directories.
`inspect --json` (read-only, unprivileged) runs under the same PATH.

Per case one tool (drawn) misbehaves in one of the kinds; the others answer as on an empty
host. Checks: exit 0 or 5, never 70; within 30 s and 200 MB (peak RSS, wait4); the tick still
published the Node report; the misbehaving tool did run; no guard ran; and no process of the
fake tools is left once the tick has exited (the marker is in every fake tool's argv).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import cases
from tests.hostile.cases import Case
from tests.hostile.checks import Verdict
from tests.hostile.rig import EXE, Rig, base_env, run_cli

pytestmark = [pytest.mark.apiserver, pytest.mark.real_commands, pytest.mark.slow]

KINDS = ("flood-stdout", "grandchild", "sigsegv", "hang", "flood-exit", "flood-stderr")
# the commands an idle tick runs on this machine, by their fake's key
TARGETS = ("ip-address", "ip-route", "netplan-get")
GUARDS = ("shutdown", "reboot", "poweroff", "halt", "ansible-playbook", "systemd-run",
          "modprobe", "update-initramfs", "apt-get", "apt", "dpkg", "nvidia-smi", "kill",
          "magicstick-gpu-publish", "systemd-analyze", "setpriv")
# a flood stops at this much (then keeps its pipe open): enough to show an unbounded reader,
# bounded for the machine the suite runs on
FLOOD_CAP = 256 * 1024 * 1024
LEFTOVER_GRACE_S = 3.0

TOOL = r'''
import json, os, resource, signal, sys, time
HERE = os.path.dirname(os.path.abspath(__file__))
name = os.path.basename(sys.argv[0])
args = sys.argv[1:]
with open(os.path.join(HERE, "calls.log"), "a") as log:
    log.write(json.dumps([name, *args]) + "\n")
config = json.load(open(os.path.join(HERE, "config.json")))
if name == "ip" and "route" in args:
    key = "ip-route"
elif name == "ip":
    key = "ip-address"
elif name == "netplan" and args[:1] == ["get"]:
    key = "netplan-get"
elif name == "systemctl" and args[:1] == ["is-active"]:
    key = "systemctl-is-active"
elif name == "iw" and args[-1:] == ["link"]:
    key = "iw-link"
else:
    with open(os.path.join(HERE, "guards.log"), "a") as log:
        log.write(json.dumps([name, *args]) + "\n")
    sys.stderr.write("hostile suite: a guard, not the real " + name + "\n")
    sys.exit(1)
mode = config["modes"].get(key, "ok")
OK = {"ip-address": ("[]\n", 0), "ip-route": ("[]\n", 0),
      "netplan-get": ("network:\n  version: 2\n", 0), "systemctl-is-active": ("inactive\n", 3),
      "iw-link": ("Not connected.\n", 0)}
out, code = OK[key]
cap = config["flood_cap"]

def forever():
    while True:
        time.sleep(3600)

def flood(fd):
    chunk = b"x" * 65536
    sent = 0
    while sent < cap:
        sent += os.write(fd, chunk)

if mode == "ok":
    sys.stdout.write(out)
    sys.exit(code)
if mode == "hang":
    forever()
if mode == "flood-stdout":
    flood(1)
    forever()
if mode == "flood-stderr":
    flood(2)
    forever()
if mode == "flood-exit":
    flood(1)
    sys.exit(0)
if mode == "grandchild":
    sys.stdout.write(out)
    sys.stdout.flush()
    if os.fork() == 0:
        forever()  # holds stdout and stderr open
    sys.exit(code)
if mode.startswith("signal-"):
    sys.stdout.write(out[: len(out) // 2])
    sys.stdout.flush()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file in anyone's directory
    os.kill(os.getpid(), getattr(signal, mode[len("signal-"):]))
    forever()
raise SystemExit("unknown mode " + mode)
'''


def write_tools(directory: Path, modes: dict[str, str]) -> None:
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps({"modes": modes,
                                                       "flood_cap": FLOOD_CAP}))
    script = f"#!{sys.executable} -IS\n{TOOL}"
    for name in ("ip", "netplan", "systemctl", "iw", *GUARDS):
        path = directory / name
        path.write_text(script)
        path.chmod(0o755)


def lines(path: Path) -> list[list[str]]:
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line]
    except FileNotFoundError:
        return []


def processes_with(marker: str) -> dict[int, str]:
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().replace(b"\0", b" ").decode(errors="replace")
            if marker in argv:
                found[int(entry)] = argv.strip()
    return found


def leftovers(marker: str) -> dict[int, str]:
    """Processes of the fake tools still there after a grace period."""
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    while (found := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def kill_all(pids: dict[int, str]) -> None:
    for pid in pids:  # the case's own fake tools, by their ids
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def status_json(code: int, reason: str, message: str) -> bytes:
    body = json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                       "status": "Failure", "message": message, "reason": reason,
                       "code": code}).encode()
    return (f"HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def keep_idle(node_name: str) -> Callable[[Any], bytes | None]:
    """The proxy's guard: no HostOperation and no network request ever reaches the tick; the
    only write that passes is this case's Node report."""
    def guard(request: Any) -> bytes | None:
        path = request.path.split("?")[0]
        if "/hostoperations" in path:
            if request.method == "GET":
                return status_json(404, "NotFound", "hidden by the hostile suite")
            return status_json(403, "Forbidden", "refused by the hostile suite")
        if "/secrets" in path:
            body = b'{"kind":"SecretList","apiVersion":"v1","metadata":{},"items":[]}'
            return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n" % len(body)) + body
        if request.method != "GET" and path != f"/api/v1/nodes/{node_name}":
            return status_json(403, "Forbidden", "refused by the hostile suite")
        return None
    return guard


def machine_boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


@cases.parametrize("tools", KINDS, 2)
def test_misbehaving_tools(case: Case, make_rig: Callable[..., Rig], tmp_path: Path) -> None:
    rng = case.rng()
    verdict = Verdict(case)
    rig = make_rig(verdict)
    # this machine's Node: its boot ID and kernel, so that the report is published
    rig.kube.set_node_info(rig.node_name, boot_id=machine_boot_id(), kernel=os.uname().release)
    rig.proxy.guard = keep_idle(rig.node_name)
    marker = f"hostile-tools-{secrets.token_hex(6)}"
    tools = tmp_path / marker
    target = TARGETS[0] if case.canonical else rng.choice(TARGETS)
    mode = case.kind
    if mode == "sigsegv":
        mode = "signal-" + ("SIGSEGV" if case.canonical else
                            rng.choice(["SIGSEGV", "SIGBUS", "SIGABRT", "SIGKILL"]))
    write_tools(tools, {target: mode})
    verdict.note(f"{target} does {mode}; tools in {tools}")
    state_dir, runtime = tmp_path / "state", tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    env = base_env({"PATH": str(tools), "RUNTIME_DIRECTORY": str(runtime)})
    argv = [EXE, "tick", "--executor", "real", "--root", "/", "--state-dir", str(state_dir),
            "--kubeconfig", str(rig.kubeconfig), "--node-name", rig.node_name]
    assert argv[argv.index("--root") + 1] == "/" and str(state_dir).startswith(str(tmp_path))
    try:
        rig.proxy.begin("tick (real executor, idle)")
        run = run_cli("tick (real executor, idle)", argv, env=env, cwd=str(tmp_path))
        rig.proxy.end()
        verdict.run(run, {0, 5})
        left = leftovers(marker)
        verdict.expect(not left, f"the tick left {len(left)} process(es) of its tools running: "
                       f"{sorted(left.values())[:3]}")
        kill_all(left)
        calls = lines(tools / "calls.log")
        ran = [c for c in calls if target.split("-")[0] == c[0]]
        verdict.expect(bool(ran), f"the tick never ran {target}: the case tested nothing "
                       f"(calls: {calls})")
        verdict.expect(not lines(tools / "guards.log"),
                       f"a command that changes a host ran: {lines(tools / 'guards.log')}")
        published = [e for e in rig.proxy.requests_of("tick (real executor, idle)")
                     if e.method == "PATCH" and e.path.startswith("/api/v1/nodes/")
                     and e.upstream_status == 200]
        verdict.expect(bool(published), "the tick did not publish the Node report")

        run = run_cli("inspect --json", [EXE, "inspect", "--json"], env=env, cwd=str(tmp_path))
        verdict.run(run, {0})
        left = leftovers(marker)
        verdict.expect(not left, f"inspect left {len(left)} process(es) of its tools running")
        kill_all(left)
        verdict.expect(not lines(tools / "guards.log"), "inspect ran a command that changes "
                       f"a host: {lines(tools / 'guards.log')}")
    finally:
        kill_all(processes_with(marker))
    verdict.done()
