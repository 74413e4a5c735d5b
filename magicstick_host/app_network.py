"""The network trial's own way back (network.md): the adapters of `network-rollback` and
`network-recovery`, composed beside app.py (which chooses the runner)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from magicstick_host.app import executor_clock, executor_runner
from magicstick_host.ports.hostfs import RootedHostFS

if TYPE_CHECKING:
    from magicstick_host.network.rollback import RollbackDeps

def rollback_deps(root: str, state_dir: str, executor: str) -> RollbackDeps:
    """The adapters of `network-rollback` and `network-recovery`: the host under `root`, the
    trial's store in `state_dir`, netplan run for real (`--root /`) or by the simulator (and
    then the simulated host's clocks)."""
    from magicstick_host.network.rollback import RollbackDeps
    from magicstick_host.network.trial_steps import TrialPorts
    from magicstick_host.ports.hostfs import HostReadError

    runner = executor_runner(root, executor)
    fs = RootedHostFS(root)

    def boot_id() -> str | None:
        try:
            return fs.read_text("/proc/sys/kernel/random/boot_id").strip() or None
        except HostReadError:
            return None

    ports = TrialPorts(root=root, state_dir=Path(state_dir), runner=runner,
                       clock=executor_clock(root, executor))
    return RollbackDeps(ports=ports, boot_id=boot_id)
