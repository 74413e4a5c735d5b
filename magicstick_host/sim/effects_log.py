"""The host's own record of what was done to it: `.magicstick-sim/effects.jsonl`.

One JSON object per line: `{"effect": ..., "argv": [...], "bootId": ..., "bootCount": ...}` plus
effect-specific keys (e.g. `"playbook": "prepare.yml"`, `"rc": 0`, `"fault": "apt-fails"`).
Tests count effects from here ("exactly one playbook run") instead of from mock call lists.

Effects: `shutdown`, `shutdown-cancelled`, `shutdown-failed` (SimRunner); `playbook` (every
ansible-playbook run that started, with `playbook`, `rc` and, for a crash, `"crashed": true`);
`initramfs` (update-initramfs, run by the memory playbook); `fault` (a one-shot fault fired);
`netplan-generate`, `netplan-apply`, `timer-armed`, `timer-stopped`, `wifi-scan` (sim/network.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from magicstick_host.sim.model import Host

EFFECTS_LOG = ".magicstick-sim/effects.jsonl"


def read_effects(root: Path) -> list[dict[str, object]]:
    path = Path(root) / EFFECTS_LOG
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def record(root: Path, host: Host, effect: str, argv: Sequence[str], **extra: object) -> None:
    entry: dict[str, object] = {
        "effect": effect,
        "argv": list(argv),
        "bootId": host.boot_id,
        "bootCount": host.boot_count,
        **extra,
    }
    path = Path(root) / EFFECTS_LOG
    path.parent.mkdir(exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    with os.fdopen(fd, "a", encoding="utf-8") as log:
        log.write(json.dumps(entry, sort_keys=True) + "\n")
