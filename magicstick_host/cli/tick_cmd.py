"""`magicstick-host tick`: what the systemd timer runs every 15 s."""

from __future__ import annotations

import click

from magicstick_host import app
from magicstick_host.cli.options import profiles_option, root_option, worker_options
from magicstick_host.errors import ExitCode


@click.command("tick")
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
) -> int:
    """Advance the current host operation by at most one bounded step, then report.

    Without a kubeconfig (an agent-only node) it does nothing and exits 0. When another tick
    or host convergence holds the maintenance lock it exits quietly with the busy code.
    """
    if not app.kubeconfig_present(kubeconfig):
        return int(ExitCode.OK)
    deps = app.build_tick_deps(
        root=root,
        profiles_dir=profiles_dir,
        state_dir=state_dir,
        kubeconfig=kubeconfig,
        node_name=node_name,
        executor=executor,
    )
    result = app.tick(deps)
    if result.exit_code == ExitCode.BUSY:
        return int(result.exit_code)  # quietly: the timer simply tries again
    if result.exit_code != ExitCode.OK:
        click.echo(f"magicstick-host tick: {result.summary}", err=True)
    else:
        click.echo(result.summary)
    return int(result.exit_code)
