"""`magicstick-host sim`: simulated hosts for demos and tests. Never touches the real machine.

The simulator (magicstick_host/sim/) is imported only when one of these commands runs; the
appliance install leaves it out (playbooks/roles/install), and then these commands say so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from magicstick_host import app
from magicstick_host.errors import ExitCode

if TYPE_CHECKING:
    from typing import Any, TypeVar

    F = TypeVar("F", bound=Callable[..., Any])


@click.group("sim")
def sim_group() -> None:
    """Create and drive simulated host roots (fake /sys, /proc, /etc trees)."""


@sim_group.command("list")
def sim_list() -> int:
    """Name every scenario."""
    scenarios = app.simulator().scenarios.list_scenarios()
    width = max(len(name) for name, _ in scenarios)
    for name, description in scenarios:
        click.echo(f"{name:<{width}}  {description}")
    return int(ExitCode.OK)


@sim_group.command("create")
@click.argument("scenario")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--boot-id", default=None, help="Use this boot ID instead of the scenario's own.")
def sim_create(scenario: str, directory: Path, boot_id: str | None) -> int:
    """Write the fake host root of SCENARIO into DIRECTORY (new or empty)."""
    app.simulator().writer.create_host(scenario, directory, boot_id=boot_id)
    click.echo(f"created {scenario} in {directory}")
    return int(ExitCode.OK)


def _run_command(argv: Sequence[str]) -> int:
    """A unit's command, through the real command line (as systemd starts it)."""
    from magicstick_host.cli.main import main

    return main(list(argv))


def _state_dir_option(required: bool) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        return click.option(
            "--state-dir", "state_dir", default=None, required=required,
            envvar="MAGICSTICK_HOST_STATE_DIR", show_envvar=True,
            type=click.Path(file_okay=False, path_type=Path),
            help="The worker's state directory for this host (the --state-dir of its ticks): "
            "where the network units find the trial record.")(func)

    return decorate


@sim_group.command("boot")
@click.argument("directory", type=click.Path(file_okay=False, exists=True, path_type=Path))
@_state_dir_option(required=False)
def sim_boot(directory: Path, state_dir: Path | None) -> int:
    """Start the simulated host again, after its scheduled shutdown or a power loss (they boot
    alike): a new boot ID, the newest kernel, pending firmware settings active, /run cleared
    (its scheduled shutdown is done, its transient timers are gone).

    \b
    On a host with a network, what systemd does at boot follows: netplan's generator renders
    /etc/netplan; magicstick-host-network-recovery.service runs `magicstick-host
    network-recovery --executor sim` when --state-dir holds a trial record; then the network
    starts on what netplan last generated. Without --state-dir the recovery unit is not run.
    Exit 0 once booted, whatever the recovery unit's exit code (it is printed)."""
    result = app.simulator().systemd.boot(directory, state_dir, _run_command)
    click.echo(f"booted {directory}: boot ID {result.boot_id}")
    if result.recovery is not None:
        click.echo(f"{result.recovery.unit}: `magicstick-host {' '.join(result.recovery.argv)}` "
                   f"exited {result.recovery.exit_code}")
    elif result.skipped:
        click.echo(f"network-recovery not run: {result.skipped}")
    if result.network:
        click.echo("network started on the configuration netplan last generated")
    return int(ExitCode.OK)


@sim_group.command("timers")
@click.argument("directory", type=click.Path(file_okay=False, exists=True, path_type=Path))
def sim_timers(directory: Path) -> int:
    """List the armed transient timers of the simulated host and when each is due."""
    armed = app.simulator().systemd.armed(directory)
    if not armed:
        click.echo("no transient timer is armed")
    for unit, wait in armed.items():
        due = "due now" if wait <= 0 else f"due in {wait:.0f} s"
        click.echo(f"{unit}.timer: {due}")
    return int(ExitCode.OK)


@sim_group.command("fire-timers")
@click.argument("directory", type=click.Path(file_okay=False, exists=True, path_type=Path))
@_state_dir_option(required=True)
@click.option("--elapse", is_flag=True,
              help="First let the time pass until the next timer is due (moves the simulated "
              "host's CLOCK_BOOTTIME ahead; the wall clock stays the real one).")
def sim_fire_timers(directory: Path, state_dir: Path, elapse: bool) -> int:
    """Fire the simulated host's due transient timers as systemd does: unload each one, then
    start its service (the network trial's rollback timer: `magicstick-host network-rollback
    --executor sim`). Exit 0 when every started service exited 0 (also when none was due),
    else the first non-zero exit code of a service."""
    result = app.simulator().systemd.fire_due(directory, state_dir, _run_command,
                                              elapse=elapse)
    if result.elapsed_s:
        click.echo(f"{result.elapsed_s:.0f} s passed on {directory}")
    for run in result.fired:
        click.echo(f"{run.unit}: `magicstick-host {' '.join(run.argv)}` exited {run.exit_code}")
    for unit, wait in result.pending.items():
        click.echo(f"{unit}.timer: not due yet (in {wait:.0f} s)")
    if not result.fired and not result.pending:
        click.echo("no transient timer is armed")
    return next((run.exit_code for run in result.fired if run.exit_code), int(ExitCode.OK))
