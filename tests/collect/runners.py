"""A canned CommandRunner: unit tests never run a real command."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from magicstick_host.ports.runner import CommandResult


class FakeRunner:
    def __init__(self, returncode: int = 0) -> None:
        self.returncode = returncode
        self.calls: list[tuple[str, ...]] = []

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        stdout_path: str | None = None,
    ) -> CommandResult:
        self.calls.append(tuple(argv))
        return CommandResult(tuple(argv), self.returncode, "", "")
