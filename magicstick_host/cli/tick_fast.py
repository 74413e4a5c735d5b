"""The timer's `magicstick-host tick` (and `inspect`), read without click.

The systemd timer starts `tick` 5,760 times a day with the same few options, and importing
click (with the inspect, ast and gettext modules it brings) was about a tenth of an idle tick's
CPU (issue "The idle tick at the floor"); `inspect` is the preflight people and scripts run.
When the command line is one of these commands with only its own options, each given once as
`--name value` or `--name=value` (a flag bare), and every value is one click would accept, this
reads it exactly as the click command does (the same options, environment variables and
defaults: cli/options.py). Anything else (help, an unknown or repeated option, a value click
would refuse, another command) returns None, and click reads the command line, with its own
messages. tests/test_tick_fast.py holds the two to the same parameters.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence

DEFAULT_STATE_DIR = "/var/lib/magicstick/host-management"
DEFAULT_KUBECONFIG = "/etc/rancher/k3s/k3s.yaml"

# how click checks a value: click.Path(exists=True, file_okay=False), click.Path(file_okay=
# False), click.Choice, a plain string, a flag
EXISTING_DIR, DIR, EXECUTOR, TEXT, FLAG = "existing-dir", "dir", "executor", "text", "flag"
EXECUTORS = ("real", "sim")

# option -> (parameter, environment variable or "", default, check), as the click options
# declare them
Options = dict[str, tuple[str, str, str | bool | None, str]]
ROOT: Options = {"--root": ("root", "MAGICSTICK_HOST_ROOT", "/", EXISTING_DIR)}
PROFILES: Options = {"--profiles": ("profiles_dir", "MAGICSTICK_HOST_PROFILES", None, DIR)}
TICK_OPTIONS: Options = {
    **ROOT,
    **PROFILES,
    "--state-dir": ("state_dir", "MAGICSTICK_HOST_STATE_DIR", DEFAULT_STATE_DIR, DIR),
    "--kubeconfig": ("kubeconfig", "MAGICSTICK_HOST_KUBECONFIG", DEFAULT_KUBECONFIG, TEXT),
    "--node-name": ("node_name", "MAGICSTICK_HOST_NODE_NAME", None, TEXT),
    "--executor": ("executor", "MAGICSTICK_HOST_EXECUTOR", "real", EXECUTOR),
}
INSPECT_OPTIONS: Options = {**ROOT, **PROFILES, "--json": ("as_json", "", False, FLAG)}
FAST_COMMANDS: dict[str, Options] = {"tick": TICK_OPTIONS, "inspect": INSPECT_OPTIONS}


def fast_arguments(argv: Sequence[str],
                   environ: Mapping[str, str]) -> tuple[str, dict[str, object]] | None:
    """(command, its parameters by click's names), or None when click must read this."""
    options = FAST_COMMANDS.get(argv[0]) if argv else None
    if options is None:
        return None
    given: dict[str, str | bool] = {}
    rest = list(argv[1:])
    while rest:
        name, equals, value = rest.pop(0).partition("=")
        if name not in options or name in given:
            return None
        if options[name][3] == FLAG:
            if equals:
                return None
            given[name] = True
            continue
        if not equals:
            if not rest or rest[0].startswith("-"):
                return None
            value = rest.pop(0)
        given[name] = value
    params: dict[str, object] = {}
    for name, (param, variable, default, check) in options.items():
        # click takes an empty environment variable for an unset one
        chosen = given[name] if name in given else (
            environ.get(variable) if variable else None) or default
        if not _acceptable(check, chosen):
            return None
        params[param] = chosen
    return argv[0], params


def fast_tick_arguments(argv: Sequence[str],
                        environ: Mapping[str, str]) -> dict[str, object] | None:
    found = fast_arguments(argv, environ)
    return found[1] if found is not None and found[0] == "tick" else None


def _acceptable(check: str, value: object) -> bool:
    if check == EXECUTOR:
        return value in EXECUTORS
    if check == EXISTING_DIR:
        return isinstance(value, str) and _is_readable_dir(value)
    if check == DIR:  # absent is fine; present, it must be a readable directory
        return value is None or (isinstance(value, str) and (
            not _exists(value) or _is_readable_dir(value)))
    return True


def _exists(path: str) -> bool:
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


def _is_readable_dir(path: str) -> bool:
    if not path:
        return False
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISDIR(mode) and os.access(path, os.R_OK)
