"""Golden inspect output: reviewed in diffs. Regenerate with UPDATE_GOLDEN=1 and read the diff."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.inspect.conftest import inspect_valid

GOLDEN = Path(__file__).parent / "golden"
SCENARIOS = [
    "strix-halo-ubuntu-26.04-old-kernel",
    "strix-halo-ubuntu-24.04-hwe-6.17",
    "strix-halo-ubuntu-26.04-ready",
    "strix-halo-ubuntu-26.04-driver-failing",
    "strix-halo-nvidia-ubuntu-26.04-ready",
    "strix-halo-second-amd-ubuntu-26.04-old-kernel",
    "strix-halo-ubuntu-26.04-foreign-ttm",
    "cpu-only-ubuntu-24.04",
    "strix-halo-debian-13",
    "strix-halo-pci-missing-class",
]


def stable(doc: dict[str, Any]) -> dict[str, Any]:
    """Drop what differs between runs: the time and where the tree was created."""
    return {k: v for k, v in doc.items() if k not in ("observedAt", "root")}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_inspect_matches_the_reviewed_golden_output(
    scenario: str, sim_roots: dict[str, Path]
) -> None:
    actual = stable(inspect_valid(sim_roots[scenario]))
    path = GOLDEN / f"{scenario}.json"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(json.dumps(actual, indent=2, sort_keys=True) + "\n")
    expected = json.loads(path.read_text())
    assert actual == expected
