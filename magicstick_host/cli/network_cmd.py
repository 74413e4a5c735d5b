"""`magicstick-host network-rollback` and `magicstick-host network-recovery`: the network
trial's way back, run by systemd and not by the tick (magicstick_host/network/rollback.py).

- network-rollback: started by the transient timer a trial arms just before `netplan apply`;
  restores the previous configuration when the change was not confirmed in time.
- network-recovery: started early in boot by magicstick-host-network-recovery.service, before
  the network; restores the configuration of a trial a restart interrupted.
Both exit 0 when there is nothing to do.
"""

from __future__ import annotations

import click

from magicstick_host.app_network import rollback_deps
from magicstick_host.cli.options import root_option, state_dir_option
from magicstick_host.errors import ExitCode
from magicstick_host.network.rollback import (
    RollbackResult,
    run_boot_recovery,
    run_deadline_rollback,
)

executor_option = click.option(
    "--executor",
    type=click.Choice(["real", "sim"]),
    default="real",
    show_default=True,
    envvar="MAGICSTICK_HOST_EXECUTOR",
    show_envvar=True,
    help="real: run netplan on this machine (needs --root /). "
    "sim: the host simulator acts on a simulated --root.",
)


def _report(result: RollbackResult, command: str) -> int:
    if result.exit_code == ExitCode.OK:
        click.echo(result.summary)
    else:
        click.echo(f"magicstick-host {command}: {result.summary}", err=True)
    return int(result.exit_code)


@click.command("network-rollback")
@root_option
@state_dir_option
@executor_option
def network_rollback_command(root: str, state_dir: str, executor: str) -> int:
    """Restore the previous network configuration if the running trial was not confirmed
    before its deadline (started by the trial's timer; safe to run at any time)."""
    return _report(run_deadline_rollback(rollback_deps(root, state_dir, executor)),
                   "network-rollback")


@click.command("network-recovery")
@root_option
@state_dir_option
@executor_option
def network_recovery_command(root: str, state_dir: str, executor: str) -> int:
    """Early in boot: restore the configuration of a network trial that a restart interrupted
    (netplan generate only; the network then starts on the old configuration)."""
    return _report(run_boot_recovery(rollback_deps(root, state_dir, executor)),
                   "network-recovery")
