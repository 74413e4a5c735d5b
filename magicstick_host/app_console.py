"""The console's views of the worker, read-only (`status`, `history`), and its way out of a
block (`recover`): the composition root's part for the commands an administrator runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from magicstick_host.app import gpu_health, node_name_of
from magicstick_host.domain.limits import DEFAULT_LIMITS
from magicstick_host.ports.clock import RealClock

if TYPE_CHECKING:
    from typing import Any


def read_state_readonly(state_dir: str) -> tuple[Any, str, bool]:
    """(state, why it cannot be read, whether it is the original worker's) for viewing: never
    moves, rewrites, migrates or blocks on anything (unlike the tick's load)."""
    from magicstick_host.ports.state_store import FileStateStore

    return FileStateStore(Path(state_dir)).peek_state()


def state_conditions(state_dir: str) -> list[dict[str, str]]:
    """Every condition of the state directory that blocks the tick, with its fix."""
    from magicstick_host.ports.state_paths import probe_state_dir

    return [
        {"path": str(p.path), "role": p.role, "problem": p.kind, "what": p.what, "fix": p.fix}
        for p in probe_state_dir(Path(state_dir), owner_uid=os.geteuid())
    ]


def status_document(
    state_dir: str, node_name: str | None, *, root: str | None = None
) -> dict[str, Any]:
    """`root`: also read the host's NVIDIA health there (the console view; read-only)."""
    from magicstick_host.domain.nvidia_health import nvidia_health
    from magicstick_host.domain.status_view import build_status

    name = node_name_of(node_name)
    state, error, legacy = read_state_readonly(state_dir)
    return build_status(
        state,
        node_name=name,
        observed_at=RealClock().now().wall,
        state_error=error,
        conditions=state_conditions(state_dir),
        legacy=legacy,
        nvidia=nvidia_health(gpu_health(root)) if root is not None else None,
    )


def history_document(state_dir: str) -> dict[str, Any]:
    from magicstick_host.domain.history import build_history
    from magicstick_host.ports.state_store import FileStateStore

    store = FileStateStore(Path(state_dir))
    entries, error, skipped = store.peek_journal()
    state, _, _ = store.peek_state()
    return build_history(
        entries,
        observed_at=RealClock().now().wall,
        journal=str(store.journal_path),
        journal_error=error,
        skipped_lines=skipped,
        pending=state.last_journal if state is not None else None,
    )


def recover(state_dir: str, node_name: str) -> str:
    """Clear a stopped worker: move aside a state file or journal no load can use, archive a
    corrupt state, archive the stopped operation into the journal, and lift the block."""
    from dataclasses import replace

    from magicstick_host.domain.phase import Phase
    from magicstick_host.domain.state import ProcessedRequest
    from magicstick_host.domain.times import rfc3339
    from magicstick_host.errors import StateCorruptError
    from magicstick_host.ports.lock import MaintenanceLock
    from magicstick_host.ports.state_store import FileStateStore

    store = FileStateStore(Path(state_dir))
    store.prepare()
    with MaintenanceLock(Path(state_dir) / "maintenance.lock"):
        moved = store.quarantine()
        try:
            state = store.load()
        except StateCorruptError:
            state = store.load()  # the corrupt file is archived; a blocked state replaced it
        aside = "".join(f" Moved aside: {m}." for m in moved)
        if state is None or (state.block is None and state.operation is None):
            return f"Nothing to recover: no stopped operation.{aside}"
        op = state.operation
        if state.block is None and op is not None and not op.terminal:
            return (
                f"Not recovered: {op.action} is active (phase {op.phase}) and not stopped. "
                f"It ends by itself; recover only clears a stopped worker.{aside}"
            )
        cleared = replace(state, operation=None, block=None)
        if op is not None:
            phase = op.phase if op.terminal else Phase.INTERRUPTED
            cleared = cleared.remember(
                ProcessedRequest(op.request_uid, op.request_id, phase),
                DEFAULT_LIMITS.processed_request_ids_kept,
            )
        store.commit(
            cleared,
            {
                "at": rfc3339(RealClock().now().wall),
                "event": "recovered",
                "by": "console",
                "node": node_name,
                "operation": op.to_json() if op else None,
                "block": state.block.to_json() if state.block else None,
                "quarantined": moved,
            },
        )
    what = f"{op.action} (request {op.request_id}, phase {op.phase})" if op else "the block"
    return (
        f"Recovered: archived {what} into the journal; the worker accepts new requests "
        f"again.{aside}"
    )
