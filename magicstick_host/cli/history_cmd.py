"""`magicstick-host history`: past operations with their transitions, boots and outcomes."""

from __future__ import annotations

import json

import click

from magicstick_host import app_console
from magicstick_host.cli.status_cmd import viewer_state_dir_option
from magicstick_host.domain.history import render_history
from magicstick_host.errors import ExitCode


@click.command("history")
@viewer_state_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print one versioned JSON object.")
def history_command(state_dir: str, as_json: bool) -> int:
    """List past operations from the journal: each transition, the boots seen, the outcome.

    Read-only. Inspect it before issuing a new request after a failure or an interruption.
    """
    doc = app_console.history_document(state_dir)
    click.echo(json.dumps(doc, indent=2, sort_keys=True) if as_json else render_history(doc))
    return int(ExitCode.OK)
