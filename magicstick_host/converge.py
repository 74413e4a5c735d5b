"""`magicstick-host converge`: host convergence behind the gate it shares with the worker.

lock (without waiting; busy → quiet exit 75) → load the worker's state through the state store
→ cloud-init and shutdown evidence → the gate (domain/convergence/gate.py) → record the start
(journaled) → the convergence playbook, with the lock handed down → record the end (result,
changed tasks; journaled) → exit. Other tools never parse state.json: this command is the one
stable interface (convergence.md).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from magicstick_host.collect.os_kernel import collect_boot_id
from magicstick_host.collect.packages import manager_run
from magicstick_host.collect.reader import Reader
from magicstick_host.collect.services import collect_services
from magicstick_host.domain.convergence.gate import GateFacts, Skip, converge_gate
from magicstick_host.domain.convergence.run import (
    SUCCEEDED,
    finish_run,
    journal_entry,
    start_run,
)
from magicstick_host.domain.parsers.cmdline import split_cmdline
from magicstick_host.domain.state import State
from magicstick_host.domain.times import rfc3339
from magicstick_host.effects.converge import run_convergence
from magicstick_host.effects.playbook import write_vars
from magicstick_host.errors import ExitCode, LockBusyError, StateError
from magicstick_host.lite_dataclasses import dataclass, field, replace
from magicstick_host.ports.clock import Clock
from magicstick_host.ports.hostfs import HostFS
from magicstick_host.ports.lock import MaintenanceLock
from magicstick_host.ports.runner import FdPassingRunner
from magicstick_host.ports.safe_files import open_or_create
from magicstick_host.ports.state_store import StateStore

if TYPE_CHECKING:
    from typing import Any

LOG_NAME = "converge"
VARS_NAME = "converge.json"
MAX_LOG_READ = 16 * 1024 * 1024


@dataclass
class ConvergeDeps:
    fs: HostFS
    runner: FdPassingRunner
    clock: Clock
    store: StateStore
    lock_path: Path
    playbooks_dir: Path
    timeout_s: float
    # passed to the playbook as extra vars (e.g. magicstick_root for a simulated host)
    variables: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ConvergeResult:
    exit_code: ExitCode
    summary: str
    quiet: bool = False  # busy: nothing to say, the timer tries again


def run_converge(deps: ConvergeDeps) -> ConvergeResult:
    deps.store.prepare()  # the state directory (0700) also holds the lock
    try:
        with MaintenanceLock(deps.lock_path) as lock:
            return _converge(deps, lock)
    except LockBusyError as exc:
        return ConvergeResult(ExitCode.BUSY, f"skipped: {exc}", quiet=True)


def _gate_facts(deps: ConvergeDeps) -> GateFacts:
    r = Reader(deps.fs)
    services = collect_services(r, r.parsed("/proc/cmdline", "cmdline", split_cmdline))
    run, known = manager_run(r)
    try:
        state = deps.store.load()
    except StateError as exc:
        return GateFacts(state=None, state_error=str(exc), services=services, manager_run=run,
                         manager_run_known=known)
    return GateFacts(state=state, state_error="", services=services, manager_run=run,
                     manager_run_known=known)


def _converge(deps: ConvergeDeps, lock: MaintenanceLock) -> ConvergeResult:
    facts = _gate_facts(deps)
    decision = converge_gate(facts)
    if isinstance(decision, Skip):
        return ConvergeResult(decision.exit_code, decision.message)
    state = facts.state or State()
    boot_id = collect_boot_id(Reader(deps.fs)) or ""
    run = start_run(state.convergence, at=rfc3339(deps.clock.now().wall), boot_id=boot_id)
    state = deps.store.commit(replace(state, convergence=run), journal_entry(run))

    log_path = _fresh_log(deps.store)
    vars_path = write_vars(deps.store.directory, VARS_NAME, deps.variables)
    result = run_convergence(
        deps.runner,
        playbooks_dir=deps.playbooks_dir,
        vars_path=vars_path,
        log_path=log_path,
        lock_fd=lock.fd,
        timeout_s=deps.timeout_s,
    )
    done = finish_run(
        run,
        at=rfc3339(deps.clock.now().wall),
        returncode=result.returncode,
        log_text=_read_log(log_path) + result.stdout,
        log_path=str(log_path),
        runner_note=result.stderr,
    )
    deps.store.commit(replace(state, convergence=done), journal_entry(done))
    code = ExitCode.OK if done.result == SUCCEEDED else ExitCode.EFFECT_FAILED
    return ConvergeResult(code, done.message)


def _fresh_log(store: StateStore) -> Path:
    """`<state dir>/logs/converge.log`, emptied: it holds the last run (the journal keeps the
    summary of every run)."""
    path = store.op_log_path(LOG_NAME)
    fd = open_or_create(path, os.O_WRONLY | os.O_TRUNC, role="log file", owner_uid=os.geteuid())
    os.close(fd)
    return path


def _read_log(path: Path) -> str:
    try:
        with open(path, "rb") as log:
            return log.read(MAX_LOG_READ).decode("utf-8", errors="replace")
    except OSError:
        return ""
