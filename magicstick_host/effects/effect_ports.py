"""What every effect is given and what it is: the ports of a step (`EffectPorts`) and the
signature of an effect (`Effect`). Its own module so that the effects here and the network
trial's steps (magicstick_host/network/step_effects.py) share them without importing each
other; the composition root (app.py) puts both in the one table the tick runs its steps from.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from magicstick_host.lite_dataclasses import dataclass
from magicstick_host.ports.clock import Clock
from magicstick_host.ports.hostfs import RootedHostFS
from magicstick_host.ports.kube import KubePort
from magicstick_host.ports.runner import CommandRunner

if TYPE_CHECKING:
    from typing import Any


@dataclass
class EffectPorts:
    runner: CommandRunner
    kube: KubePort | None
    hostfs: RootedHostFS
    playbooks_dir: Path
    # where the per-operation vars files and logs go (the state directory)
    work_dir: Path
    log_path: Callable[[str], Path]
    playbook_timeout_s: float
    # keeps the Node report fresh while a long step runs
    heartbeat: Callable[[], None]
    # the network trial's steps record their times, and the crash-point tests stop them
    # between their effects (magicstick_host/network/step_effects.py)
    clock: Clock | None = None
    crash: Callable[[str], None] = lambda point: None


# (the step's inputs, the ports, the request UID) -> (ok, detail)
if TYPE_CHECKING:
    Effect = Callable[[dict[str, Any], EffectPorts, str], tuple[bool, str]]
