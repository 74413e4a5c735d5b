"""Which hostile cases run: generated from seeds, reproducible, and enough of them to matter.

Each family has a list of kinds (the inputs the issue names: `[`x200000, `HTTP/1.1 ²00`, a tool
that forks a grandchild, ...). Its cases are numbered across the seeds; case j is kind
`j % len(kinds)` with every other parameter (sizes, depths, which request is hit, for how long,
which tool) drawn from `random.Random(f"{family}:{seed}:{index}")`. With the default seeds and
counts every kind runs at least once in CI, and its first case (`canonical`) takes the input
exactly as the issue names it; more cases draw more parameters.

- MAGICSTICK_HOSTILE_SEED: one seed or a comma-separated list (default: DEFAULT_SEEDS);
- MAGICSTICK_HOSTILE_CASES: cases per family and seed (default: each family's own count,
  chosen so that the suite stays within its time budget on a loaded 2-core machine).

A failing case prints its seed and index and the command that runs it alone.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pytest

SEED_ENV = "MAGICSTICK_HOSTILE_SEED"
CASES_ENV = "MAGICSTICK_HOSTILE_CASES"
DEFAULT_SEEDS = (20261202, 7, 424242)


def seeds() -> tuple[int, ...]:
    raw = os.environ.get(SEED_ENV, "").strip()
    if not raw:
        return DEFAULT_SEEDS
    return tuple(int(part) for part in raw.replace(" ", "").split(",") if part)


def cases_per_seed(default: int) -> int:
    raw = os.environ.get(CASES_ENV, "").strip()
    return int(raw) if raw else default


@dataclass(frozen=True)
class Case:
    family: str
    kind: str
    seed: int
    index: int  # within the seed
    # the kind's first case of the run: it takes the input exactly as the issue names it
    # (`[` x 200000, `HTTP/1.1 ²00` as one byte, 2000 levels, 100k keys); later ones draw
    canonical: bool = False
    # the run it belongs to: which kind it is depends on its place among all the seeds' cases
    run_seeds: tuple[int, ...] = ()
    per_seed: int = 1

    @property
    def id(self) -> str:
        return f"{self.kind}-s{self.seed}-{self.index}"

    def rng(self) -> random.Random:
        return random.Random(f"{self.family}:{self.seed}:{self.index}")

    def reproduce(self) -> str:
        seeds = ",".join(map(str, self.run_seeds or (self.seed,)))
        return (f"{SEED_ENV}={seeds} {CASES_ENV}={self.per_seed} .venv/bin/pytest "
                f"tests/hostile -k '{self.id}'")

    def __str__(self) -> str:
        return f"hostile case {self.family}/{self.id} (seed {self.seed}, index {self.index})"


def generate(family: str, kinds: Sequence[str], default_per_seed: int) -> list[Case]:
    per_seed = cases_per_seed(default_per_seed)
    out: list[Case] = []
    j = 0
    run = seeds()
    for seed in run:
        for index in range(per_seed):
            out.append(Case(family, kinds[j % len(kinds)], seed, index, j < len(kinds), run,
                            per_seed))
            j += 1
    return out


def parametrize(family: str, kinds: Sequence[str], default_per_seed: int,
                xfail: Mapping[str, str] | None = None) -> pytest.MarkDecorator:
    """The family's cases as the parameter `case`; `xfail` maps a kind to the reason it fails
    until a fix lands (strict: the case fails the suite as soon as it passes, to be removed)."""
    xfail = xfail or {}
    params = [pytest.param(c, id=c.id, marks=[pytest.mark.xfail(strict=True,
                                                                reason=xfail[c.kind])]
                           if c.kind in xfail else [])
              for c in generate(family, kinds, default_per_seed)]
    return pytest.mark.parametrize("case", params)
