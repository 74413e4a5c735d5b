"""`magicstick-host sim`: simulated hosts for demos and tests. Never touches the real machine.

The simulator (magicstick_host/sim/) is imported only when one of these commands runs; the
appliance install leaves it out (playbooks/roles/install), and then these commands say so.
"""

from __future__ import annotations

from pathlib import Path

import click

from magicstick_host import app
from magicstick_host.errors import ExitCode


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


@sim_group.command("boot")
@click.argument("directory", type=click.Path(file_okay=False, exists=True, path_type=Path))
def sim_boot(directory: Path) -> int:
    """Start the simulated host again: a new boot ID, the newest kernel, pending firmware
    settings active, /run cleared (its scheduled shutdown is done)."""
    click.echo(f"booted {directory}: boot ID {app.simulator().boot.boot_host(directory)}")
    return int(ExitCode.OK)
