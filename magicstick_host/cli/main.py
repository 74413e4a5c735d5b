"""The command line. Exceptions, and the problems a tick met, become exit codes here, and
only here (the codes are the errors' own: errors.py)."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence

import click

from magicstick_host.cli.history_cmd import history_command
from magicstick_host.cli.inspect_cmd import inspect_command
from magicstick_host.cli.journal import say
from magicstick_host.cli.options import EXIT_CODES_HELP
from magicstick_host.cli.sim_cmd import sim_group
from magicstick_host.cli.status_cmd import recover_command, status_command
from magicstick_host.cli.tick_cmd import tick_command
from magicstick_host.errors import ExitCode, MagicstickError
from magicstick_host.tick_result import TickResult


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="\b\nExit codes:\n" + EXIT_CODES_HELP,
)
def cli() -> None:
    """Prepare and recover the hosts of the magicstick AI appliance.

    `tick` is run by the systemd timer; `inspect` is the read-only preflight; `status` is the
    console view; `history` lists past operations from the journal.
    """


cli.add_command(tick_command)
cli.add_command(inspect_command)
cli.add_command(status_command)
cli.add_command(recover_command)
cli.add_command(history_command)
cli.add_command(sim_group)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        result = cli.main(args=argv, prog_name="magicstick-host", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("magicstick-host: aborted", err=True)
        return 1
    except MagicstickError as exc:
        say("err", f"{exc.code}: {exc.message}")
        return int(exc.exit_code)
    except Exception as exc:  # a bug: one clear line, the traceback only on request
        if os.environ.get("MAGICSTICK_HOST_DEBUG"):
            traceback.print_exc()
        say(
            "err",
            f"internal error: {type(exc).__name__}: {exc} "
            "(set MAGICSTICK_HOST_DEBUG=1 for the traceback)",
        )
        return int(ExitCode.INTERNAL)
    if isinstance(result, TickResult):  # a tick that ran: the most severe problem it met
        return int(result.exit_code)
    return int(result) if isinstance(result, int) else 0


def entry_point() -> None:
    sys.exit(main())
