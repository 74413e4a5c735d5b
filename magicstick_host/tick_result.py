"""What one tick reports to the command line: a summary, the problems that decide its exit code
(errors.exit_code_of, in cli/main.py), and the lines it logs (domain/log_lines.py)."""

from __future__ import annotations

from magicstick_host.domain.log_lines import LogLine
from magicstick_host.errors import ExitCode, MagicstickError, exit_code_of
from magicstick_host.lite_dataclasses import dataclass


@dataclass(frozen=True)
class TickResult:
    summary: str
    # what went wrong on the way (Kubernetes, a failed effect, a wait): the exit code
    problems: tuple[MagicstickError, ...] = ()
    # said once each: the transitions of this tick
    events: tuple[LogLine, ...] = ()
    # what holds now (said when it starts and when it ends)
    conditions: tuple[LogLine, ...] = ()
    # the tick looked at everything (it was not busy, waiting or stopped by an error): a
    # condition it did not find has ended
    complete: bool = True

    @property
    def exit_code(self) -> ExitCode:
        return exit_code_of(self.problems)
