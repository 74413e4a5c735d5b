"""`ansible-playbook` on a simulated host: argv parsing, the vars file, and ansible's output.

The worker runs `ansible-playbook -i localhost, -c local <dir>/prepare.yml -e @<vars.json>` (or
`memory.yml`). The playbook is found by its basename, the vars after `-e @` / `-e@` /
`--extra-vars @`. The vars file is a real file (the worker's state directory), not one under
the simulated root. The effects themselves are in `sim/prepare.py` and `sim/memory.py`.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from magicstick_host.lite_dataclasses import dataclass, field

if TYPE_CHECKING:
    from typing import Any

PLAYBOOKS = ("prepare.yml", "memory.yml", "converge.yml")
COLUMNS = 80
HOST = "localhost"


class PlaybookUsageError(Exception):
    """The command line or the vars file is unusable: ansible exits before any play (rc 5/1)."""

    def __init__(self, message: str, returncode: int = 5) -> None:
        super().__init__(message)
        self.returncode = returncode


@dataclass(frozen=True)
class PlaybookCall:
    playbook: str  # basename: prepare.yml | memory.yml
    path: str
    variables: dict[str, Any]


def parse_call(args: tuple[str, ...]) -> PlaybookCall:
    playbook_path: str | None = None
    vars_paths: list[str] = []
    i = 1
    while i < len(args):
        arg = args[i]
        if arg in ("-e", "--extra-vars") and i + 1 < len(args):
            vars_paths.append(args[i + 1])
            i += 2
            continue
        if arg.startswith("-e") and len(arg) > 2:
            vars_paths.append(arg[2:])
        elif arg.startswith("--extra-vars="):
            vars_paths.append(arg.split("=", 1)[1])
        elif arg in ("-i", "--inventory", "-c", "--connection", "-l", "--limit"):
            i += 1
        elif not arg.startswith("-") and os.path.basename(arg) in PLAYBOOKS:
            playbook_path = arg
        i += 1
    if playbook_path is None:
        raise PlaybookUsageError("ERROR! the playbook could not be found (simulated host knows "
                                 f"only {', '.join(PLAYBOOKS)})", 1)
    variables: dict[str, Any] = {}
    for spec in vars_paths:
        if not spec.startswith("@"):
            raise PlaybookUsageError(f"ERROR! the simulated host takes only -e @FILE, not {spec!r}")
        try:
            with open(spec[1:], encoding="utf-8") as handle:
                loaded = json.load(handle)
        except (OSError, ValueError) as exc:
            raise PlaybookUsageError(f"ERROR! Unable to load extra vars from {spec[1:]}: {exc}",
                                     1) from exc
        if not isinstance(loaded, dict):
            raise PlaybookUsageError(f"ERROR! extra vars in {spec[1:]} must be a mapping", 1)
        variables.update(loaded)
    return PlaybookCall(os.path.basename(playbook_path), playbook_path, variables)


def banner(text: str) -> str:
    return f"{text} " + "*" * max(3, COLUMNS - 1 - len(text) - 1)


@dataclass
class PlayLog:
    """ansible-playbook's default stdout callback, for one play on localhost."""

    play: str
    lines: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("ok", "changed", "unreachable", "failed", "skipped", "rescued", "ignored"), 0))

    def __post_init__(self) -> None:
        self.lines += ["", banner(f"PLAY [{self.play}]"), ""]

    def task(self, name: str, status: str, result: dict[str, Any] | None = None) -> None:
        """status: ok | changed | skipping | failed."""
        self.lines.append(banner(f"TASK [{name}]"))
        if status == "failed":
            self.counts["failed"] += 1
            body = json.dumps({"changed": False, **(result or {})}, sort_keys=True)
            self.lines.append(f"fatal: [{HOST}]: FAILED! => {body}")
        else:
            key = {"ok": "ok", "changed": "changed", "skipping": "skipped"}[status]
            self.counts[key] += 1
            if status == "changed":
                self.counts["ok"] += 1  # ansible counts a changed task as ok too
            suffix = f" => {json.dumps(result, indent=4)}" if result else ""
            self.lines.append(f"{status}: [{HOST}]{suffix}")
        self.lines.append("")

    def recap(self) -> str:
        c = self.counts
        self.lines += [
            banner("PLAY RECAP"),
            f"{HOST:<27}: ok={c['ok']:<4} changed={c['changed']:<4} "
            f"unreachable={c['unreachable']:<4} failed={c['failed']:<4} "
            f"skipped={c['skipped']:<4} rescued={c['rescued']:<4} ignored={c['ignored']:<4}",
            "",
        ]
        return self.text()

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    @property
    def returncode(self) -> int:
        return 2 if self.counts["failed"] else 0


def require(variables: dict[str, Any], name: str, kind: type) -> Any:
    """A playbook variable of the given type, or PlaybookUsageError (ansible: undefined var)."""
    value = variables.get(name)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise PlaybookUsageError(
            f"fatal: [{HOST}]: FAILED! => {{\"msg\": \"The task includes an option with an "
            f"undefined variable. The error was: '{name}' is undefined or not a "
            f"{kind.__name__}\"}}", 2)
    return value
