"""`magicstick-host status` (the console view) and `recover` (clear a stopped worker)."""

from __future__ import annotations

import json

import click

from magicstick_host import app, app_console
from magicstick_host.cli.options import (
    DEFAULT_STATE_DIR,
    profiles_option,
    root_option,
    state_dir_option,
)
from magicstick_host.cli.render import render_inspection
from magicstick_host.domain.status_view import render_status
from magicstick_host.errors import BadInputError, ExitCode

# the read-only views take any path: a file where the state directory should be is one of the
# conditions they report, not a usage error
viewer_state_dir_option = click.option(
    "--state-dir",
    default=DEFAULT_STATE_DIR,
    show_default=True,
    envvar="MAGICSTICK_HOST_STATE_DIR",
    show_envvar=True,
    type=click.Path(),
    help="Local state, journal, logs and the maintenance lock.",
)


@click.command("status")
@root_option
@viewer_state_dir_option
@click.option("--node-name", default=None, envvar="MAGICSTICK_HOST_NODE_NAME", show_envvar=True)
@click.option("--json", "as_json", is_flag=True, help="Print one versioned JSON object.")
def status_command(root: str, state_dir: str, node_name: str | None, as_json: bool) -> int:
    """Show the current operation, its steps, restarts used, what blocks the worker (with the
    command that fixes it), the last host convergence run, the NVIDIA health, and what to do
    next. Read-only."""
    doc = app_console.status_document(state_dir, node_name, root=root)
    click.echo(json.dumps(doc, indent=2, sort_keys=True) if as_json else render_status(doc))
    return int(ExitCode.OK)


@click.command("recover")
@root_option
@profiles_option
@state_dir_option
@click.option("--node-name", default=None, envvar="MAGICSTICK_HOST_NODE_NAME", show_envvar=True)
@click.option(
    "--confirm",
    "confirm",
    required=True,
    metavar="HOSTNAME",
    help="This host's exact name, typed to confirm.",
)
def recover_command(
    root: str, profiles_dir: str | None, state_dir: str, node_name: str | None, confirm: str
) -> int:
    """Archive a stopped operation (or a corrupt state) into the journal and clear the block.

    A state file or journal that no tick can use (a symlink, a FIFO, a directory) is moved
    aside first. Shows the host evidence first. Needs root, at the console, with the exact host
    name.
    """
    name = app.node_name_of(node_name)
    if confirm != name:
        raise BadInputError(f"--confirm {confirm!r} does not match this host's name {name!r}")
    click.echo(render_inspection(app.inspect_host(root, profiles_dir)))
    click.echo("")
    click.echo(app_console.recover(state_dir, name))
    return int(ExitCode.OK)
