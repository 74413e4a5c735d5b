"""`magicstick-host converge`: host convergence behind the worker's gate (convergence.md)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from magicstick_host import app
from magicstick_host.cli.options import root_option, state_dir_option
from magicstick_host.converge import ConvergeDeps, run_converge
from magicstick_host.domain.limits import DEFAULT_LIMITS
from magicstick_host.errors import BadInputError, ExitCode
from magicstick_host.ports.clock import RealClock
from magicstick_host.ports.hostfs import RootedHostFS
from magicstick_host.ports.runner import FdPassingRunner, RealRunner
from magicstick_host.ports.state_store import FileStateStore


def build_converge_deps(*, root: str, state_dir: str, executor: str) -> ConvergeDeps:
    """The real adapters (the composition root's job: app.py once the core allows it)."""
    runner: FdPassingRunner
    variables: dict[str, object] = {}
    if executor == "real":
        if os.path.realpath(root) != "/":
            raise BadInputError(
                "--executor real acts on this machine, so it needs --root /; "
                "use --executor sim for a simulated host"
            )
        runner = RealRunner()
    else:
        if not app.is_sim_root(root):
            raise BadInputError(f"--executor sim needs a simulated host root; {root} is not one")
        runner = app.simulator().runner.SimRunner(Path(root))
        variables["magicstick_root"] = os.path.realpath(root)
    return ConvergeDeps(
        fs=RootedHostFS(root),
        runner=runner,
        clock=RealClock(),
        store=FileStateStore(Path(state_dir)),
        lock_path=Path(state_dir) / "maintenance.lock",
        playbooks_dir=app.default_playbooks_dir(),
        timeout_s=DEFAULT_LIMITS.playbook_timeout_s,
        variables=variables,
    )


@click.command("converge")
@root_option
@state_dir_option
@click.option(
    "--executor",
    type=click.Choice(["real", "sim"]),
    default="real",
    show_default=True,
    envvar="MAGICSTICK_HOST_EXECUTOR",
    show_envvar=True,
    help="real: run the convergence playbook on this machine (needs --root /). "
    "sim: the host simulator's convergence on a simulated --root.",
)
def converge_command(root: str, state_dir: str, executor: str) -> int:
    """Run host convergence (K3s pin, NVIDIA display driver, nvidia-persistenced) if the
    worker allows it.

    Takes the maintenance lock without waiting: when a tick holds it, exits quietly with the
    busy code (75). Skips while a host operation is in progress (75) or the worker is stopped
    (4), while a shutdown is scheduled and until cloud-init's base installation has finished
    (76). Otherwise runs the convergence playbook holding the lock (its descriptor handed down
    in MAGICSTICK_CONVERGE_LOCK_FD) and records the run in the journal and in `status`:
    0 when it converged, 6 when the playbook failed. A timer counts 75 and 76 as success.
    """
    result = run_converge(build_converge_deps(root=root, state_dir=state_dir, executor=executor))
    if result.quiet:
        return int(result.exit_code)
    if result.exit_code in (ExitCode.OK, ExitCode.BUSY, ExitCode.WAITING):
        click.echo(f"magicstick-host converge: {result.summary}")
    else:
        click.echo(f"magicstick-host converge: {result.summary}", err=True)
    return int(result.exit_code)
