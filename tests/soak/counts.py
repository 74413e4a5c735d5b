"""What the soak counts, and the summary it prints at the end."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from tests.soak.invariants import RSS_BOUND_BYTES, Violation
from tests.soak.proxy import FAULT_KINDS, HOSTILE_KINDS


@dataclass
class Counts:
    ticks: int = 0
    kills: Counter[str] = field(default_factory=Counter)  # by kind
    boots: Counter[str] = field(default_factory=Counter)  # requested, stray, power-loss
    api_armed: Counter[str] = field(default_factory=Counter)  # ticks armed, per kind
    api_injected: Counter[str] = field(default_factory=Counter)  # ticks it acted in, per kind
    api_requests_hit: Counter[str] = field(default_factory=Counter)  # requests it acted on
    host_faults: Counter[str] = field(default_factory=Counter)
    exit_codes: Counter[int] = field(default_factory=Counter)
    requests: dict[str, Counter[str]] = field(default_factory=dict)  # action -> final phase
    blocks: Counter[str] = field(default_factory=Counter)
    recoveries: int = 0
    # systemd's network units (tests/soak/host.py): runs, and the effects they had
    systemd_units: Counter[str] = field(default_factory=Counter)
    systemd_effects: Counter[str] = field(default_factory=Counter)
    reimages: int = 0
    reports_not_fresh: int = 0
    violations: list[Violation] = field(default_factory=list)
    tick_walls: list[float] = field(default_factory=list)
    # issue #24's hostile inputs
    hostile_armed: Counter[str] = field(default_factory=Counter)  # answers, per kind
    hostile_injected: Counter[str] = field(default_factory=Counter)  # ticks it acted in
    models: Counter[str] = field(default_factory=Counter)  # hostile Models created, per kind
    model_ticks: int = 0  # ticks run while a hostile Model of the host existed
    models_refused: int = 0  # the apiserver did not store it (a 504 under load)
    tools_armed: Counter[str] = field(default_factory=Counter)
    tools_fired: Counter[str] = field(default_factory=Counter)  # in a tick or a systemd unit
    tools_after_kill: int = 0  # processes of a SIGKILLed tick's tool, killed after it
    memos: Counter[str] = field(default_factory=Counter)  # planted, per kind
    memos_skipped: int = 0  # no memo of the worker's to edit yet (a boot had emptied /run)
    memos_left: int = 0  # the planted memo was still there, unchanged, after the tick
    local_steps_due: int = 0  # ticks with a due local step (checked by the invariants)
    local_steps_due_hostile: int = 0  # ... under a hostile answer
    messages_clipped: int = 0  # ticks whose HostOperation status message was clipped
    peak_rss: list[int] = field(default_factory=list)  # bytes, per measured tick

    def merge(self, other: Counts) -> None:
        self.ticks += other.ticks
        for mine, theirs in ((self.kills, other.kills), (self.boots, other.boots),
                             (self.api_armed, other.api_armed),
                             (self.api_injected, other.api_injected),
                             (self.api_requests_hit, other.api_requests_hit),
                             (self.host_faults, other.host_faults), (self.blocks, other.blocks),
                             (self.systemd_units, other.systemd_units),
                             (self.systemd_effects, other.systemd_effects),
                             (self.hostile_armed, other.hostile_armed),
                             (self.hostile_injected, other.hostile_injected),
                             (self.models, other.models), (self.memos, other.memos),
                             (self.tools_armed, other.tools_armed),
                             (self.tools_fired, other.tools_fired)):
            mine.update(theirs)
        self.exit_codes.update(other.exit_codes)
        for action, phases in other.requests.items():
            self.requests.setdefault(action, Counter()).update(phases)
        self.recoveries += other.recoveries
        self.reimages += other.reimages
        self.reports_not_fresh += other.reports_not_fresh
        self.violations += other.violations
        self.tick_walls += other.tick_walls
        self.peak_rss += other.peak_rss
        for name in ("model_ticks", "models_refused", "tools_after_kill", "memos_skipped",
                     "memos_left",
                     "local_steps_due", "local_steps_due_hostile", "messages_clipped"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def _line(counter: Counter[str], order: tuple[str, ...] = ()) -> str:
    keys = [k for k in order if k in counter] + sorted(k for k in counter if k not in order)
    return ", ".join(f"{k} {counter[k]}" for k in keys) or "none"


def summary(counts: Counts, *, seed: int, hosts: list[str], wall_s: float, bound_s: float,
            bound_note: str, planned: int | None = None) -> str:
    walls = sorted(counts.tick_walls) or [0.0]
    p = walls[min(len(walls) - 1, int(0.99 * len(walls)))]
    injected = sum(counts.api_injected.values())
    rss = sorted(counts.peak_rss) or [0]
    lines = [
        "== soak summary",
        f"seed {seed}; hosts: {', '.join(hosts)}",
        f"ticks {counts.ticks}"
        + (f" of {planned} planned (stopped at the time limit)"
           if planned is not None and counts.ticks < planned else "")
        + f"; wall time {wall_s:.0f} s ({wall_s / 60:.1f} min)",
        f"tick wall time: max {walls[-1]:.1f} s, p99 {p:.1f} s, median "
        f"{walls[len(walls) // 2]:.2f} s; bound {bound_s:.0f} s ({bound_note})",
        f"kills {sum(counts.kills.values())}: {_line(counts.kills)}",
        f"boots {sum(counts.boots.values())}: {_line(counts.boots)}; machines reinstalled "
        f"{counts.reimages}",
        f"API faults injected {injected} (ticks a fault acted in): "
        f"{_line(counts.api_injected, FAULT_KINDS)}",
        f"  armed per kind: {_line(counts.api_armed, FAULT_KINDS)}",
        f"  requests hit per kind: {_line(counts.api_requests_hit, FAULT_KINDS)}",
        f"simulator faults armed: {_line(counts.host_faults)}",
        f"hostile answers that acted in a tick {sum(counts.hostile_injected.values())}: "
        f"{_line(counts.hostile_injected, HOSTILE_KINDS)}",
        f"  armed per kind: {_line(counts.hostile_armed, HOSTILE_KINDS)}",
        f"hostile KubeAI Models created {sum(counts.models.values())}: {_line(counts.models)}; "
        f"not stored by the apiserver {counts.models_refused}; ticks run while one existed "
        f"{counts.model_ticks}",
        f"tool faults armed {sum(counts.tools_armed.values())}: {_line(counts.tools_armed)}; "
        f"fired {sum(counts.tools_fired.values())}: {_line(counts.tools_fired)}; processes of a "
        f"SIGKILLed tick killed after it {counts.tools_after_kill}",
        f"memos planted {sum(counts.memos.values())}: {_line(counts.memos)}; not planted (no "
        f"memo of the worker yet) {counts.memos_skipped}; left unchanged by the tick "
        f"{counts.memos_left}",
        f"local steps due {counts.local_steps_due} (under a hostile answer "
        f"{counts.local_steps_due_hostile}); ticks with a clipped status message "
        f"{counts.messages_clipped}",
        f"tick peak RSS: max {rss[-1] / 2**20:.1f} MiB, p99 "
        f"{rss[min(len(rss) - 1, int(0.99 * len(rss)))] / 2**20:.1f} MiB, median "
        f"{rss[len(rss) // 2] / 2**20:.1f} MiB ({len(counts.peak_rss)} ticks measured); bound "
        f"{RSS_BOUND_BYTES / 2**20:.0f} MiB",
        f"tick exit codes: {', '.join(f'{k} x{v}' for k, v in sorted(counts.exit_codes.items()))}",
        f"blocks seen: {_line(counts.blocks)}; recoveries {counts.recoveries}; "
        f"asks skipped on a stale report {counts.reports_not_fresh}",
        f"systemd network units run: {_line(counts.systemd_units)}; their effects: "
        f"{_line(counts.systemd_effects)}",
        "requests per action (final phase):",
    ]
    for action in sorted(counts.requests):
        phases = counts.requests[action]
        lines.append(f"  {action:<22} {sum(phases.values()):>5}: {_line(phases)}")
    lines.append(f"invariant violations: {len(counts.violations)}")
    for v in counts.violations[:50]:
        lines.append(f"  {v}")
    if len(counts.violations) > 50:
        lines.append(f"  ... and {len(counts.violations) - 50} more")
    return "\n".join(lines)
