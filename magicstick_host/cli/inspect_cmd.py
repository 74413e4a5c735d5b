"""`magicstick-host inspect`: the read-only preflight. Needs no Kubernetes, writes nothing."""

from __future__ import annotations

import click

from magicstick_host.cli.inspect_run import run_inspect_command
from magicstick_host.cli.options import profiles_option, root_option


@click.command("inspect")
@root_option
@profiles_option
@click.option("--json", "as_json", is_flag=True, help="Print one versioned JSON object.")
def inspect_command(root: str, profiles_dir: str | None, as_json: bool) -> int:
    """Show what this host is and what preparing it would do. Read-only; runs unprivileged."""
    return run_inspect_command(root, profiles_dir, as_json)
