"""The command line. Exceptions, and the problems a tick met, become exit codes here, and
only here (the codes are the errors' own: errors.py).

The timer's `tick` is read without click when it can be (cli/tick_fast.py); click, and the
module of each command, are imported only for the command line that needs them."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING

from magicstick_host.cli.journal import say
from magicstick_host.cli.tick_fast import fast_arguments
from magicstick_host.errors import ExitCode, MagicstickError

if TYPE_CHECKING:
    from typing import Any, NoReturn

    import click

# name -> (module, attribute). A command's module is imported only when that command runs (or
# for --help): the timer starts `tick` 5,760 times a day, and it should not pay for the
# simulator, the history view or the console's commands each time.
COMMANDS: dict[str, tuple[str, str]] = {
    "tick": ("magicstick_host.cli.tick_cmd", "tick_command"),
    "inspect": ("magicstick_host.cli.inspect_cmd", "inspect_command"),
    "status": ("magicstick_host.cli.status_cmd", "status_command"),
    "recover": ("magicstick_host.cli.status_cmd", "recover_command"),
    "history": ("magicstick_host.cli.history_cmd", "history_command"),
    "sim": ("magicstick_host.cli.sim_cmd", "sim_group"),
    # host convergence beside the worker (issue 14)
    "converge": ("magicstick_host.cli.converge_cmd", "converge_command"),
    # the network trial's way back, run by systemd (units/magicstick-host-network-*.service)
    "network-rollback": ("magicstick_host.cli.network_cmd", "network_rollback_command"),
    "network-recovery": ("magicstick_host.cli.network_cmd", "network_recovery_command"),
}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    return _exit_code(lambda: _command(args)())


def _command(args: list[str]) -> Callable[[], Any]:
    """The command line's command, its module imported, ready to run."""
    fast = fast_arguments(args, os.environ)
    if fast is None:
        return lambda: _with_click(args)
    command, params = fast
    text = {k: v for k, v in params.items() if isinstance(v, str)}  # None: not given
    if command == "tick":
        from magicstick_host.cli.tick_run import run_tick_command

        return lambda: run_tick_command(
            text["root"], text.get("profiles_dir"), text["state_dir"], text["kubeconfig"],
            text.get("node_name"), text["executor"])
    from magicstick_host.cli.inspect_run import run_inspect_command

    return lambda: run_inspect_command(
        text["root"], text.get("profiles_dir"), params["as_json"] is True)


def _with_click(args: list[str]) -> Any:
    import click

    cli = _cli()
    try:
        return cli.main(args=args, prog_name="magicstick-host", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("magicstick-host: aborted", err=True)
        return 1


def _exit_code(run: Callable[[], Any]) -> int:
    try:
        result = run()
    except MagicstickError as exc:
        say("err", f"{exc.code}: {exc.message}")
        return int(exc.exit_code)
    except Exception as exc:  # a bug: one clear line, the traceback only on request
        if os.environ.get("MAGICSTICK_HOST_DEBUG"):
            import traceback

            traceback.print_exc()
        say(
            "err",
            f"internal error: {type(exc).__name__}: {exc} "
            "(set MAGICSTICK_HOST_DEBUG=1 for the traceback)",
        )
        return int(ExitCode.INTERNAL)
    if isinstance(result, int):
        return int(result)
    if result is None:
        return 0
    # a tick's result is imported only when a tick ran: tick_result.py brings the log lines
    # and the state records, which inspect does not use (issue 26)
    from magicstick_host.tick_result import TickResult

    if isinstance(result, TickResult):  # a tick that ran: the most severe problem it met
        return int(result.exit_code)
    return 0


@cache
def _cli() -> click.Group:
    import click

    from magicstick_host.cli.options import EXIT_CODES_HELP

    class LazyGroup(click.Group):
        def list_commands(self, ctx: click.Context) -> list[str]:
            return [*COMMANDS, *(name for name in self.commands if name not in COMMANDS)]

        def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
            where = COMMANDS.get(cmd_name)
            if where is None:
                return super().get_command(ctx, cmd_name)
            import importlib  # the click path only: the fast paths never import a command

            command = getattr(importlib.import_module(where[0]), where[1])
            assert isinstance(command, click.Command)
            return command

    @click.group(
        cls=LazyGroup,
        context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
        epilog="\b\nExit codes:\n" + EXIT_CODES_HELP,
    )
    def cli() -> None:
        """Prepare and recover the hosts of the magicstick AI appliance.

        `tick` is run by the systemd timer; `inspect` is the read-only preflight; `status` is
        the console view; `history` lists past operations from the journal; `converge` runs
        host convergence when the worker allows it (its timer).
        """

    assert isinstance(cli, click.Group)
    return cli


def entry_point() -> NoReturn:
    """The process: `magicstick-host ...` as installed (and the timer's tick)."""
    args = sys.argv[1:]

    def command() -> Any:
        # The imports make some 17,000 objects the cyclic garbage collector tracks, all alive
        # until the end, and it would walk them again and again while they are made. It waits
        # until the command's modules are in (tick's and inspect's; a click command imports
        # its own as it runs), then leaves them out of its walks (about 3% of an idle tick).
        # Never in main(): a test process calls that thousands of times, and frozen objects
        # are never collected.
        gc.disable()
        try:
            run = _command(args)
        finally:
            gc.freeze()
            gc.enable()
        return run()

    _leave(_exit_code(command))


def _leave(code: int) -> NoReturn:
    """End the process with `code`, skipping the interpreter's teardown when nothing needs it.

    The teardown (a full garbage collection and the freeing of every module) is about a tenth
    of an idle tick's CPU, 5,760 times a day, for a process whose memory the kernel frees
    anyway. What a normal exit does that matters is done here first: the atexit handlers (the
    logging module's flush among them) and flushing stdout and stderr. A process with another
    non-daemon thread still running exits normally, which waits for it, and so does one run
    under a profiler, a debugger or a coverage tracer, which write their results after it."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)
    threading = sys.modules.get("threading")
    if threading is not None and any(
        t.is_alive() and not t.daemon for t in threading.enumerate()
        if t is not threading.main_thread()
    ):
        sys.exit(code)
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said there
            pass
    os._exit(code)
