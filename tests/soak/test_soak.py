"""A short fault soak in the suite: the real CLI through the fault proxy on three simulated
hosts, with kills and boots; any invariant violation fails it. `make soak` is the long one.

MAGICSTICK_SOAK_TICKS and MAGICSTICK_SOAK_SEED change its length and seed (the seed is fixed by
default, so the faults armed are the same on every run; their timing is not).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.soak.proxy import FAULT_KINDS
from tests.soak.runner import soak

pytestmark = [pytest.mark.apiserver, pytest.mark.slow, pytest.mark.real_commands]

TICKS = int(os.environ.get("MAGICSTICK_SOAK_TICKS", "300"))
SEED = int(os.environ.get("MAGICSTICK_SOAK_SEED", "20261201"))


def test_a_short_soak_keeps_every_invariant(kube: Any, tmp_path: Path) -> None:
    counts, text = soak(kube.server, tmp_path, ticks=TICKS, seed=SEED, hosts=3)
    print("\n" + text)
    assert counts.ticks == TICKS, text
    assert not counts.violations, text
    # and it did soak: every kind of API fault was armed, some acted, ticks were killed,
    # hosts booted, and requests of several actions reached an end
    if TICKS >= 300:
        assert set(counts.api_armed) == set(FAULT_KINDS), text
        assert sum(counts.api_injected.values()) > 0, text
        assert sum(counts.kills.values()) > 0 and sum(counts.boots.values()) > 0, text
        assert len(counts.requests) >= 3, text
