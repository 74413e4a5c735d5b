"""When to SIGKILL a running tick: the moments a power loss or an OOM kill hurts most.

- `timed`: after a random delay within a tick's usual duration;
- `on-save`: right after the n-th replacement of `state.json` in the tick (so between a state
  save and the journal append that follows it, or the effect after an intent);
- `on-intent`: as soon as a new step intent is saved, before (or while) its effect runs;
- `on-effect`: as soon as the simulated host logs an effect, before its outcome is saved.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.soak.observe import EffectsTail
from tests.soak.schedule import Kill

Identity = tuple[int, int, int] | None


def _identity(path: Path) -> Identity:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)  # inode numbers alone are reused


def open_steps(state_path: Path) -> set[tuple[str, str]] | None:
    """The (step, startedAt) intents without an outcome in a state file; None if unreadable."""
    try:
        doc = json.loads(state_path.read_bytes())
    except (OSError, ValueError):
        return None
    op = (doc or {}).get("operation") or {}
    return {(s.get("name"), s.get("startedAt")) for s in op.get("steps") or []
            if s.get("outcome") is None}


class KillWatch:
    """Decides, polled while the tick runs, whether the kill's moment has come."""

    def __init__(self, kill: Kill, state_path: Path, effects: EffectsTail) -> None:
        self.kill, self.state_path, self.effects = kill, state_path, effects
        self.open_before = open_steps(state_path) or set()
        self.effects_size = effects.size()
        self.last = _identity(state_path)
        self.saves = 0

    def due(self, elapsed_s: float) -> bool:
        kind = self.kill.kind
        if kind == "timed":
            return elapsed_s >= self.kill.delay_s
        if kind == "on-effect":
            return self.effects.size() > self.effects_size
        seen = _identity(self.state_path)
        if seen == self.last:
            return False  # not replaced since the last look
        self.last = seen
        self.saves += 1
        if kind == "on-save":
            return self.saves >= self.kill.nth
        steps = open_steps(self.state_path)
        return bool(steps and steps - self.open_before)
