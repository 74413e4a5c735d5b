"""python -m tests.contract_live --context NAME [--kubeconfig FILE]

(`make contract-live CONTEXT=NAME [KUBECONFIG=FILE]`.) Runs the contract suite against the
cluster of that kubeconfig context: see suite.py for what it does and touches. Progress goes to
stderr; the JSON summary is the last thing written to stdout. Exit 0 only when every check
passed; 1 when one failed; 2 when the run was refused before anything was sent (no context, an
unknown context, an unusable kubeconfig); 128 + the signal after SIGINT/SIGTERM (cleaned up).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import Any

from tests.contract_live.client import Refused, default_kubeconfig, select_context
from tests.contract_live.suite import LiveRun, Stop

# what this process must never run or write, whatever a bug or a library tries
POWER_PROGRAMS = frozenset({"shutdown", "reboot", "poweroff", "halt", "systemctl", "kexec",
                            "telinit", "init", "loginctl", "busctl", "dbus-send"})
FIRMWARE_PREFIXES = ("/sys/", "/proc/sys/", "/dev/", "/boot/", "/etc/modprobe.d/")
HARMLESS = ("/dev/null", "/dev/tty", "/dev/stdout", "/dev/stderr", "/dev/pts/", "/dev/shm/")
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def watch_processes_and_firmware() -> dict[str, int]:
    """An audit hook for the rest of the process: counts every process started, and refuses
    (and counts) any power command and any write under /sys, /proc/sys, /dev or /boot."""
    counts = {"processes": 0, "power": 0, "firmware": 0}

    def program(event: str, args: tuple[Any, ...]) -> str:
        index = {"subprocess.Popen": 1, "os.exec": 1, "os.posix_spawn": 1, "os.spawn": 2}
        argv: Any = str(args[0]).split() if event == "os.system" else args[index[event]]
        first = argv if isinstance(argv, str | bytes) else (list(argv) or [""])[0]
        first = os.fsdecode(first) if isinstance(first, str | bytes) else str(first)
        return os.path.basename(first.split()[0] if first.strip() else first)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in ("subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.system"):
            counts["processes"] += 1
            if program(event, args) in POWER_PROGRAMS:
                counts["power"] += 1
                raise PermissionError("the live contract suite runs no power command")
        elif event == "open" and isinstance(args[0], str | bytes):
            path = os.fsdecode(args[0])
            mode, flags = args[1], args[2] if len(args) > 2 else 0
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and bool(flags & WRITE_FLAGS))
            if (writes and path.startswith(FIRMWARE_PREFIXES)
                    and not path.startswith(HARMLESS)):
                counts["firmware"] += 1
                raise PermissionError(f"the live contract suite writes nothing under {path}")

    sys.addaudithook(hook)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.contract_live",
        description="The HostOperation contract against the cluster of one kubeconfig context.")
    parser.add_argument("--context", default="", help="the kubeconfig context (required)")
    parser.add_argument("--kubeconfig", default="",
                        help="the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
    args = parser.parse_args(argv)
    try:
        selected = select_context(args.kubeconfig or default_kubeconfig(), args.context)
    except Refused as exc:
        print(f"contract-live: refused: {exc}", file=sys.stderr)
        print("usage: make contract-live CONTEXT=<name> [KUBECONFIG=<file>]", file=sys.stderr)
        return 2
    watch = watch_processes_and_firmware()
    run = LiveRun(selected)

    def stop(signum: int, _frame: Any) -> None:
        if run.cleaning:  # let the cleanup finish: it is what the signal asks for
            print(f"contract-live: {signal.Signals(signum).name}: cleaning up, one moment",
                  file=sys.stderr, flush=True)
            return
        raise Stop(signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)
    try:
        run.run()
    finally:
        selected.remove()
        summary = run.summary(watch)
        tally: dict[str, list[int]] = {}
        for check in summary["checks"]:
            group = "/".join(check["name"].split("/")[:2])
            tally.setdefault(group, [0, 0])[check["result"] != "passed"] += 1
        for group, (good, bad) in tally.items():
            print(f"  {group}: {good} passed" + (f", {bad} FAILED" if bad else ""),
                  file=sys.stderr)
        print(f"contract-live: {summary['result']}: {summary['passed']} passed, "
              f"{summary['failed']} failed", file=sys.stderr, flush=True)
        print(json.dumps(summary, indent=2), flush=True)
    if run.interrupted:
        return 128 + int(signal.Signals[run.interrupted])
    return 0 if summary["result"] == "passed" else 1


if __name__ == "__main__":
    sys.exit(main())
