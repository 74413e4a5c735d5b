"""The rules every hostile case is held to, as plain functions over what a case observed.

- a run's exit code is documented (magicstick_host/errors.py ExitCode, README "Exit codes"),
  never 70 and never a signal, and one the case expects;
- a run takes at most TICK_BOUND_S and its peak RSS (os.wait4's ru_maxrss) is at most
  RSS_BOUND_BYTES;
- no write sent twice (the proxy's request log): within one tick no identical write; never two
  identical POSTs or DELETEs; a HostOperation status PATCH is never sent again for the same
  status after the worker got a clean 2xx for it;
- no effect twice (the simulator's effects log): no two identical entries.

`Verdict` collects violations so that one case reports all of them, with its seed and the
command that reproduces it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from magicstick_host.errors import ExitCode
from tests.hostile.cases import Case
from tests.hostile.proxy import Exchange

TICK_BOUND_S = 30.0
RSS_BOUND_BYTES = 200 * 1024 * 1024
DOCUMENTED = frozenset(int(c) for c in ExitCode) - {int(ExitCode.INTERNAL)}
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
NOT_IDEMPOTENT = frozenset({"POST", "DELETE"})


@dataclass
class Run:
    label: str
    argv: list[str]
    exit_code: int  # negative: killed by that signal
    wall_s: float
    maxrss_bytes: int
    stdout: bytes
    stderr: str
    killed_at_limit: bool = False

    def summary(self) -> str:
        # runs of one character (a 2 kB path of "d"s, a flood) shortened to be readable
        text = re.sub(r"(.)\1{40,}", lambda m: f"{m.group(1)}[x{len(m.group(0))}]",
                      self.stderr.strip())
        tail = text if len(text) <= 1500 else f"{text[:500]} [...] {text[-1000:]}"
        return (f"{self.label}: exit {self.exit_code}, {self.wall_s:.1f} s, "
                f"RSS {self.maxrss_bytes / 2**20:.1f} MiB"
                + (" (killed at the hard limit)" if self.killed_at_limit else "")
                + (f"\n    stderr: {tail}" if tail else ""))


def run_violations(run: Run, allowed: Iterable[int]) -> list[str]:
    out = []
    allowed = frozenset(allowed)
    if run.exit_code == int(ExitCode.INTERNAL):
        out.append(f"{run.label}: exit 70 (internal error)")
    elif run.exit_code < 0:
        out.append(f"{run.label}: killed by signal {-run.exit_code}")
    elif run.exit_code not in DOCUMENTED:
        out.append(f"{run.label}: exit {run.exit_code} is not a documented exit code")
    elif run.exit_code not in allowed:
        out.append(f"{run.label}: exit {run.exit_code}, expected one of {sorted(allowed)}")
    if run.wall_s > TICK_BOUND_S:
        out.append(f"{run.label}: took {run.wall_s:.1f} s (bound {TICK_BOUND_S:.0f} s)")
    if run.maxrss_bytes > RSS_BOUND_BYTES:
        out.append(f"{run.label}: peak RSS {run.maxrss_bytes / 2**20:.0f} MiB "
                   f"(bound {RSS_BOUND_BYTES / 2**20:.0f} MiB)")
    return out


def _canonical(body: bytes) -> str:
    """A write's content, without the resourceVersion precondition (a retry after a conflict
    carries another one; the content is what matters)."""
    try:
        doc = json.loads(body)
    except ValueError:
        return body.hex()
    if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict):
        doc = {**doc, "metadata": {k: v for k, v in doc["metadata"].items()
                                   if k != "resourceVersion"}}
    return json.dumps(doc, sort_keys=True)


def _is_status_patch(e: Exchange) -> bool:
    return e.method == "PATCH" and "/hostoperations/" in e.path and \
        e.path.split("?")[0].endswith("/status")


def write_violations(log: Sequence[Exchange]) -> tuple[list[str], list[str]]:
    """(violations, observations) of the writes in a proxy log. An observation is a status
    PATCH sent again after an answer the worker could not read (the write may have arrived):
    allowed, and reported."""
    violations: list[str] = []
    observations: list[str] = []
    writes = [e for e in log if e.method in WRITES and not e.guarded]
    per_tick = Counter((e.tick, e.method, e.path, e.body) for e in writes)
    for (tick, method, path, _body), n in per_tick.items():
        if n > 1:
            violations.append(f"tick {tick}: the identical write {method} {path} was sent {n} "
                              "times")
    once = Counter((e.method, e.path, e.body) for e in writes if e.method in NOT_IDEMPOTENT)
    for (method, path, _body), n in once.items():
        if n > 1:
            violations.append(f"the identical {method} {path} was sent {n} times")
    seen: dict[tuple[str, str], Exchange] = {}
    for e in (w for w in writes if _is_status_patch(w)):
        key = (e.path, _canonical(e.body))
        first = seen.get(key)
        if first is None:
            seen[key] = e
            continue
        clean = first.upstream_status is not None and 200 <= first.upstream_status < 300 \
            and not first.hostile
        if clean:
            violations.append(f"tick {e.tick}: status PATCH {e.path} sent again with the same "
                              f"status after tick {first.tick} got a clean "
                              f"{first.upstream_status} for it")
        else:
            observations.append(f"tick {e.tick}: status PATCH {e.path} sent again after tick "
                                f"{first.tick}'s answer was "
                                f"{'hostile' if first.hostile else 'lost'} "
                                f"(the apiserver had answered {first.upstream_status})")
        if clean or (e.upstream_status is not None and not e.hostile):
            seen[key] = e
    return violations, observations


def effect_violations(effects: Sequence[dict[str, Any]]) -> list[str]:
    counted = Counter(json.dumps(e, sort_keys=True) for e in effects)
    return [f"the effect {line} is in the effects log {n} times"
            for line, n in counted.items() if n > 1]


@dataclass
class Verdict:
    case: Case
    runs: list[Run] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def run(self, run: Run, allowed: Iterable[int]) -> Run:
        self.runs.append(run)
        self.violations += run_violations(run, allowed)
        return run

    def expect(self, ok: bool, violation: str) -> bool:
        if not ok:
            self.violations.append(violation)
        return ok

    def note(self, text: str) -> None:
        self.notes.append(text)

    def report(self) -> str:
        lines = [str(self.case), f"  reproduce: {self.case.reproduce()}"]
        lines += [f"  violation: {v}" for v in self.violations]
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  {r.summary()}" for r in self.runs]
        return "\n".join(lines)

    def done(self) -> None:
        print(self.report())
        assert not self.violations, self.report()
