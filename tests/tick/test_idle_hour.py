"""An idle hour through the real tick and the real apiserver (fake clock): the report is written
about once a minute and the dashboard always finds it fresh."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from magicstick_host.domain.report_policy import dashboard_considers_fresh
from tests.harness.world import World

pytestmark = pytest.mark.apiserver

ANNOTATION = "appliance.magicstick.dev/host-management"


def test_an_idle_hour_writes_about_once_a_minute_and_stays_fresh(
    tmp_path: Path, kube: Any
) -> None:
    world = World(tmp_path, kube, "strix-halo-ubuntu-26.04-ready")
    writes: list[str] = []
    real = world.worker.patch_node_annotation

    def counting(name: str, uid: str, key: str, value: str) -> dict[str, Any]:
        writes.append(json.loads(value)["observedAt"])
        return real(name, uid, key, value)

    world.worker.patch_node_annotation = counting  # type: ignore[method-assign]
    start = world.clock.now().wall
    ticks = 0
    while (world.clock.now().wall - start).total_seconds() < 3600:
        # the timer starts the next tick 15 s after the previous one ended (about 0.5 s)
        world.tick(advance_s=15.5)
        ticks += 1
        node = kube.read_node(world.node_name)
        fresh, why = dashboard_considers_fresh(
            node["metadata"]["annotations"][ANNOTATION], node, world.clock.now().wall
        )
        assert fresh, why
    print(f"\nidle hour: {ticks} ticks, {len(writes)} report writes")
    assert 55 <= len(writes) <= 61
