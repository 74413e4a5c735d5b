"""What `magicstick-host tick` does, for both of its readers of the command line (click's, in
tick_cmd.py, and the timer's fast path, tick_fast.py)."""

from __future__ import annotations

from magicstick_host import app
from magicstick_host.cli.tick_log import log_tick
from magicstick_host.domain.log_lines import tick_stopped
from magicstick_host.errors import MagicstickError
from magicstick_host.ports.log_memory import LogMemory
from magicstick_host.tick_result import TickResult


def run_tick_command(
    root: str,
    profiles_dir: str | None,
    state_dir: str,
    kubeconfig: str,
    node_name: str | None,
    executor: str,
) -> TickResult:
    if not app.kubeconfig_present(kubeconfig):
        return TickResult("no kubeconfig: nothing to do here")
    try:
        deps = app.build_tick_deps(
            root=root,
            profiles_dir=profiles_dir,
            state_dir=state_dir,
            kubeconfig=kubeconfig,
            node_name=node_name,
            executor=executor,
        )
        result = app.tick(deps)
    except MagicstickError as exc:  # the tick stopped: said like a condition, then the code
        stopped = tick_stopped(exc.code, exc.message)
        result = TickResult(exc.message, (exc,), conditions=(stopped,), complete=False)
    log_tick(result, LogMemory.from_environment())
    return result
