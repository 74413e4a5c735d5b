"""What the soak counts, and the summary it prints at the end."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from tests.soak.invariants import Violation
from tests.soak.proxy import FAULT_KINDS


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

    def merge(self, other: Counts) -> None:
        self.ticks += other.ticks
        for mine, theirs in ((self.kills, other.kills), (self.boots, other.boots),
                             (self.api_armed, other.api_armed),
                             (self.api_injected, other.api_injected),
                             (self.api_requests_hit, other.api_requests_hit),
                             (self.host_faults, other.host_faults), (self.blocks, other.blocks),
                             (self.systemd_units, other.systemd_units),
                             (self.systemd_effects, other.systemd_effects)):
            mine.update(theirs)
        self.exit_codes.update(other.exit_codes)
        for action, phases in other.requests.items():
            self.requests.setdefault(action, Counter()).update(phases)
        self.recoveries += other.recoveries
        self.reimages += other.reimages
        self.reports_not_fresh += other.reports_not_fresh
        self.violations += other.violations
        self.tick_walls += other.tick_walls


def _line(counter: Counter[str], order: tuple[str, ...] = ()) -> str:
    keys = [k for k in order if k in counter] + sorted(k for k in counter if k not in order)
    return ", ".join(f"{k} {counter[k]}" for k in keys) or "none"


def summary(counts: Counts, *, seed: int, hosts: list[str], wall_s: float, bound_s: float,
            bound_note: str, planned: int | None = None) -> str:
    walls = sorted(counts.tick_walls) or [0.0]
    p = walls[min(len(walls) - 1, int(0.99 * len(walls)))]
    injected = sum(counts.api_injected.values())
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
