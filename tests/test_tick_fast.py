"""The timer's fast path reads `tick` exactly as click does, or leaves it to click."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magicstick_host.cli.inspect_cmd import inspect_command
from magicstick_host.cli.tick_cmd import tick_command
from magicstick_host.cli.tick_fast import (
    INSPECT_OPTIONS,
    TICK_OPTIONS,
    fast_arguments,
    fast_tick_arguments,
)

BASE = Path(os.environ.get("TMPDIR", "/tmp")) / f"tick-fast-{os.getpid()}"
DIR, FILE, MISSING = str(BASE / "dir"), str(BASE / "file"), str(BASE / "missing")
VALUES = [DIR, FILE, MISSING, "", "real", "sim", "other", "node-1", "-x", "a=b"]
VARIABLES = [variable for _, variable, _, _ in TICK_OPTIONS.values()]
COMMANDS = {"tick": tick_command, "inspect": inspect_command}


@pytest.fixture(scope="module", autouse=True)
def paths() -> Iterator[None]:
    (BASE / "dir").mkdir(parents=True, exist_ok=True)
    (BASE / "file").write_text("x")
    yield


@contextmanager
def environment(values: Mapping[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in VARIABLES}
    try:
        for name in VARIABLES:
            os.environ.pop(name, None)
        os.environ.update(values)
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def click_reads(args: list[str], command: str = "tick") -> dict[str, Any] | None:
    try:
        with COMMANDS[command].make_context(command, list(args)) as ctx:
            return dict(ctx.params)
    except (click.exceptions.Exit, click.ClickException):
        return None


OPTION_NAMES = sorted({*TICK_OPTIONS, *INSPECT_OPTIONS})
token = st.one_of(
    st.sampled_from([*OPTION_NAMES, "--help", "-h", "--verbose", "--"]),
    st.builds(lambda o, v: f"{o}={v}", st.sampled_from(OPTION_NAMES), st.sampled_from(VALUES)),
    st.sampled_from(VALUES),
)
env = st.dictionaries(st.sampled_from(VARIABLES), st.sampled_from(VALUES), max_size=4)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(COMMANDS)), st.lists(token, max_size=6), env)
def test_whatever_the_fast_path_reads_click_reads_the_same(command: str, args: list[str],
                                                         variables: dict[str, str]) -> None:
    with environment(variables):
        fast = fast_arguments([command, *args], os.environ)
        if fast is not None:
            assert fast == (command, click_reads(args, command))


@pytest.mark.parametrize(("args", "variables"), [
    ([], {}),  # the unit: everything from its Environment= lines
    ([], {"MAGICSTICK_HOST_ROOT": DIR, "MAGICSTICK_HOST_NODE_NAME": "node-1"}),
    (["--root", DIR, "--executor", "sim", "--state-dir", MISSING, "--kubeconfig", FILE,
      "--node-name", "node-1", f"--profiles={DIR}"], {}),
    (["--node-name="], {}),  # empty: the tick refuses it, as after click
])
def test_the_timers_command_lines_take_the_fast_path(args: list[str],
                                                     variables: dict[str, str]) -> None:
    with environment(variables):
        fast = fast_tick_arguments(["tick", *args], os.environ)
        assert fast is not None
        assert fast == click_reads(args)


def test_inspect_takes_the_fast_path() -> None:
    for args in ([], ["--json"], ["--root", DIR, "--json", f"--profiles={MISSING}"]):
        with environment({}):
            assert fast_arguments(["inspect", *args], os.environ) == (
                "inspect", click_reads(args, "inspect"))
    assert fast_arguments(["inspect", "--json=1"], {}) is None


@pytest.mark.parametrize("args", [
    ["--help"], ["--root", MISSING], ["--root", FILE], ["--executor", "other"],
    ["--state-dir", FILE], ["--root", DIR, "--root", DIR], ["--node-name"], ["extra"],
])
def test_what_click_must_answer_is_left_to_click(args: list[str]) -> None:
    with environment({}):
        assert fast_tick_arguments(["tick", *args], os.environ) is None
    assert fast_tick_arguments(["status", *args], {}) is None
