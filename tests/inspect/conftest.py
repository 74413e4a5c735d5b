from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from magicstick_host import app, schemas
from magicstick_host.sim.writer import create_host


@pytest.fixture(scope="session")
def sim_roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every scenario created once per session (read-only use only)."""
    from magicstick_host.sim.scenarios import list_scenarios

    base = tmp_path_factory.mktemp("sims")
    roots = {}
    for name, _ in list_scenarios():
        create_host(name, base / name)
        roots[name] = base / name
    return roots


def inspect_valid(root: Path) -> dict[str, Any]:
    doc = app.inspect_host(str(root), None)
    problems = schemas.errors("inspect", doc)
    assert not problems, problems
    return doc
