"""`magicstick-host inspect`: the read-only preflight. Needs no Kubernetes, writes nothing."""

from __future__ import annotations

import json

import click

from magicstick_host import app
from magicstick_host.cli.options import profiles_option, root_option
from magicstick_host.cli.render import render_inspection
from magicstick_host.errors import ExitCode


@click.command("inspect")
@root_option
@profiles_option
@click.option("--json", "as_json", is_flag=True, help="Print one versioned JSON object.")
def inspect_command(root: str, profiles_dir: str | None, as_json: bool) -> int:
    """Show what this host is and what preparing it would do. Read-only; runs unprivileged."""
    doc = app.inspect_host(root, profiles_dir)
    if as_json:
        click.echo(json.dumps(doc, indent=2, sort_keys=True))
    else:
        click.echo(render_inspection(doc))
    return int(ExitCode.OK)
