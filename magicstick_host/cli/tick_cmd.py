"""`magicstick-host tick`: what the systemd timer runs every 15 s."""

from __future__ import annotations

import click

from magicstick_host.cli.options import (
    EXIT_CODES_HELP,
    profiles_option,
    root_option,
    worker_options,
)
from magicstick_host.cli.tick_run import run_tick_command
from magicstick_host.tick_result import TickResult


@click.command("tick", epilog="\b\nExit codes:\n" + EXIT_CODES_HELP)
@root_option
@profiles_option
@worker_options
def tick_command(
    root: str,
    profiles_dir: str | None,
    state_dir: str,
    kubeconfig: str,
    node_name: str | None,
    executor: str,
) -> TickResult:
    """Advance the current host operation by at most one bounded step, then report.

    Without a kubeconfig (an agent-only node) it does nothing and exits 0. When another tick
    or host convergence holds the maintenance lock it exits quietly with the busy code. An idle
    tick prints nothing; a transition is said once, with its request ID, and a condition that
    lasts (Kubernetes unreachable, a blocked state) when it starts and when it ends.
    """
    return run_tick_command(root, profiles_dir, state_dir, kubeconfig, node_name, executor)
