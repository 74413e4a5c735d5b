"""The host simulator's command runner: performs effects on a simulated host root.

It stands in for the real machine behind the command-runner port (`--executor sim`). Each
effect it performs is appended to `.magicstick-sim/effects.jsonl`, so tests count what really
happened ("exactly one shutdown") from the host's side instead of from mock call lists.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from magicstick_host.ports.runner import NOT_FOUND, CommandResult
from magicstick_host.sim.model import Host, ScheduledShutdown
from magicstick_host.sim.writer import SIM_DIR, load_host, write_host

EFFECTS_LOG = f"{SIM_DIR}/effects.jsonl"


def read_effects(root: Path) -> list[dict[str, object]]:
    path = Path(root) / EFFECTS_LOG
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class SimRunner:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        stdout_path: str | None = None,
    ) -> CommandResult:
        args = tuple(argv)
        host = load_host(self.root)
        if args[:2] == ("systemctl", "is-active") and len(args) == 3:
            unit_state = host.units.get(args[2].removesuffix(".service"), "inactive")
            return CommandResult(args, 0 if unit_state == "active" else 3, unit_state + "\n", "")
        if args[:2] == ("uname", "-m"):
            return CommandResult(args, 0, host.kernel.arch + "\n", "")
        if args and args[0] == "shutdown":
            return self._shutdown(host, args)
        return CommandResult(args, NOT_FOUND, "", f"{args[0]}: not simulated")

    def _shutdown(self, host: Host, args: tuple[str, ...]) -> CommandResult:
        if "shutdown" in host.faults:
            self._record(host, "shutdown-failed", args)
            return CommandResult(args, 1, "", "Failed to call ScheduleShutdown: Access denied")
        if args[1:2] == ("-c",):
            host.shutdown = None
            write_host(host, self.root)
            self._record(host, "shutdown-cancelled", args)
            return CommandResult(args, 0, "", "")
        modes = {"-r": "reboot", "-P": "poweroff"}
        if len(args) < 3 or args[1] not in modes or not args[2].startswith("+"):
            return CommandResult(args, 1, "", f"shutdown: unsupported arguments {args[1:]}")
        minutes = int(args[2][1:])
        usec = int((time.time() + 60 * minutes) * 1_000_000)
        host.shutdown = ScheduledShutdown(usec=usec, mode=modes[args[1]])
        write_host(host, self.root)
        self._record(host, "shutdown", args)
        return CommandResult(args, 0, "", f"Shutdown scheduled for +{minutes} min\n")

    def _record(self, host: Host, effect: str, args: tuple[str, ...]) -> None:
        entry = {
            "effect": effect,
            "argv": list(args),
            "bootId": host.boot_id,
            "bootCount": host.boot_count,
        }
        fd = os.open(self.root / EFFECTS_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        with os.fdopen(fd, "a", encoding="utf-8") as log:
            log.write(json.dumps(entry, sort_keys=True) + "\n")
