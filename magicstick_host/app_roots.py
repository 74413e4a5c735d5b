"""Which runner answers a root's read-only queries (this machine's, the simulator's, none),
and the host simulator's entry points: the composition root's part for simulated hosts."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from magicstick_host.ports.runner import NOT_FOUND, CommandResult

if TYPE_CHECKING:
    from typing import Any

    from magicstick_host.ports.runner import CommandRunner

SIM_MARKER = ".magicstick-sim/host.json"


class NoCommandsRunner:
    """For a root that is neither this machine nor a simulated host: commands can't observe it."""

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        stdout_path: str | None = None,
    ) -> CommandResult:
        return CommandResult(tuple(argv), NOT_FOUND, "", "no commands run against a non-live root")


class SimQueryRunner:
    """The simulator's runner for a simulated root, made at its first command: an `inspect`
    runs none, and the simulator (its network model, its writer, pathlib) is about 6 ms of the
    console's 44 ms to import."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._runner: CommandRunner | None = None

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        stdout_path: str | None = None,
    ) -> CommandResult:
        if self._runner is None:
            from pathlib import Path

            self._runner = simulator().runner.SimRunner(Path(self.root))
        return self._runner.run(argv, timeout=timeout, env=env, stdout_path=stdout_path)


def is_sim_root(root: str) -> bool:
    return os.path.isfile(os.path.join(root, SIM_MARKER))


class _Simulator:
    """The host simulator's entry points (boot, runner, scenarios, writer), each module
    imported when first used: it is for demos and tests, and the appliance install leaves it
    out (then this is bad input, one line)."""

    def __getattr__(self, name: str) -> Any:
        try:
            if name == "boot":
                import magicstick_host.sim.boot as boot

                return boot
            elif name == "runner":
                import magicstick_host.sim.runner as runner

                return runner
            elif name == "scenarios":
                import magicstick_host.sim.scenarios as scenarios

                return scenarios
            elif name == "writer":
                import magicstick_host.sim.writer as writer

                return writer
            elif name == "systemd":
                import magicstick_host.sim.systemd as systemd

                return systemd
            elif name == "clock":
                import magicstick_host.sim.clock as clock

                return clock
        except ImportError as exc:
            from magicstick_host.errors import BadInputError

            raise BadInputError(
                f"the host simulator is not installed here ({exc.name}); simulated hosts are "
                "for demos and tests, from a checkout"
            ) from None
        raise AttributeError(name)


def simulator() -> Any:
    return _Simulator()
