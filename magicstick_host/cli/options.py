"""Options shared by several commands, each with its environment variable."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import click

# the timer's fast path reads the tick's options without click, from the same defaults
from magicstick_host.cli.tick_fast import DEFAULT_KUBECONFIG, DEFAULT_STATE_DIR
from magicstick_host.errors import EXIT_CODE_MEANINGS

if TYPE_CHECKING:
    from typing import Any, TypeVar

__all__ = ["DEFAULT_KUBECONFIG", "DEFAULT_STATE_DIR"]

if TYPE_CHECKING:
    F = TypeVar("F", bound=Callable[..., Any])

# click's \b keeps the lines as they are
EXIT_CODES_HELP = "\n".join(
    f"  {code.value:>3}  {code.name.lower().replace('_', '-')}: {meaning}"
    for code, meaning in EXIT_CODE_MEANINGS.items()
)

root_option = click.option(
    "--root",
    "root",
    default="/",
    show_default=True,
    envvar="MAGICSTICK_HOST_ROOT",
    show_envvar=True,
    type=click.Path(exists=True, file_okay=False),
    help="Read the host under this directory as if it were /.",
)
profiles_option = click.option(
    "--profiles",
    "profiles_dir",
    default=None,
    envvar="MAGICSTICK_HOST_PROFILES",
    show_envvar=True,
    type=click.Path(file_okay=False),
    help="Directory of reviewed profiles (default: the shipped ones).",
)



def state_dir_option(func: F) -> F:
    return click.option(
        "--state-dir",
        default=DEFAULT_STATE_DIR,
        show_default=True,
        envvar="MAGICSTICK_HOST_STATE_DIR",
        show_envvar=True,
        type=click.Path(file_okay=False),
        help="Local state, journal, logs and the maintenance lock.",
    )(func)


def worker_options(func: F) -> F:
    func = click.option(
        "--executor",
        type=click.Choice(["real", "sim"]),
        default="real",
        show_default=True,
        envvar="MAGICSTICK_HOST_EXECUTOR",
        show_envvar=True,
        help="real: run commands on this machine (needs --root /). "
        "sim: the host simulator acts on a simulated --root.",
    )(func)
    func = click.option(
        "--node-name",
        default=None,
        envvar="MAGICSTICK_HOST_NODE_NAME",
        show_envvar=True,
        help="This host's Kubernetes Node name (default: the short host name).",
    )(func)
    func = click.option(
        "--kubeconfig",
        default=DEFAULT_KUBECONFIG,
        show_default=True,
        envvar="MAGICSTICK_HOST_KUBECONFIG",
        show_envvar=True,
        help="The node's local management credential. Missing: do nothing, exit 0.",
    )(func)
    return state_dir_option(func)
