"""Options shared by several commands, each with its environment variable."""

from __future__ import annotations

import click

root_option = click.option(
    "--root",
    "root",
    default="/",
    show_default=True,
    envvar="MAGICSTICK_HOST_ROOT",
    show_envvar=True,
    type=click.Path(file_okay=False),
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
