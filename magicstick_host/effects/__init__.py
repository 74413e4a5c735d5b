"""Effects: each performs exactly what a RunStep says, through one port, and decides nothing.

`EFFECTS` maps a step name (an operation declares the steps it runs: `OperationKind.steps`) to
the effect that performs it; adding a step is one effect module and one line here. `perform`
returns (ok, detail) and never retries. An exception escaping it (a crash, a bug) leaves the
step's intent without an outcome, which the next tick classifies.

Each effect's module is imported when its step runs: the timer's idle ticks run none.
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


# configure-network and scan-wifi (network.md): magicstick_host/network/step_effects.py,
# loaded when a step runs (it imports effects/network.py, which loads this package)
NETWORK_STEPS = (
    "read-network-request",
    "begin-network-trial",
    "write-network-config",
    "apply-network-config",
    "keep-network-config",
    "restore-network-config",
    "scan-wifi",
)


def _network(step: str) -> Effect:
    def run(inputs: dict[str, Any], ports: EffectPorts, request_uid: str) -> tuple[bool, str]:
        from magicstick_host.network.step_effects import NETWORK_EFFECTS

        return NETWORK_EFFECTS[step](inputs, ports, request_uid)

    return run


def _shutdown(inputs: dict[str, Any], ports: EffectPorts, request_uid: str) -> tuple[bool, str]:
    from magicstick_host.effects.shutdown import schedule_shutdown

    return schedule_shutdown(
        ports.runner, str(inputs["mode"]), int(inputs["delayMinutes"]), str(inputs["text"])
    )


def _install_packages(
    inputs: dict[str, Any], ports: EffectPorts, request_uid: str
) -> tuple[bool, str]:
    from magicstick_host.effects.playbook import run_playbook

    return run_playbook(
        ports,
        "prepare.yml",
        request_uid,
        {
            "magicstick_profile_id": inputs["profileId"],
            "magicstick_os_version_id": inputs["osVersionId"],
            "magicstick_packages": inputs["packages"],
            "magicstick_target_kernel": inputs["targetKernel"],
        },
    )


def _write_ttm(inputs: dict[str, Any], ports: EffectPorts, request_uid: str) -> tuple[bool, str]:
    from magicstick_host.effects.playbook import run_playbook

    return run_playbook(
        ports,
        "memory.yml",
        request_uid,
        {
            "magicstick_dynamic_limit_mi": inputs["dynamicLimitMi"],
            "magicstick_running_kernel": inputs["runningKernel"],
            "magicstick_mem_total_mi": inputs["memTotalMi"],
        },
    )


def _write_carveout(
    inputs: dict[str, Any], ports: EffectPorts, request_uid: str
) -> tuple[bool, str]:
    from magicstick_host.effects.sysfs import write_carveout

    return write_carveout(ports.hostfs, str(inputs["pciAddress"]), int(inputs["index"]))


def _refresh(inputs: dict[str, Any], ports: EffectPorts, request_uid: str) -> tuple[bool, str]:
    from magicstick_host.effects.gpu_evidence import refresh_gpu_evidence

    return refresh_gpu_evidence(ports.runner, str(inputs["path"]), float(inputs["timeoutSeconds"]))


def _activate(inputs: dict[str, Any], ports: EffectPorts, request_uid: str) -> tuple[bool, str]:
    from magicstick_host.effects.module import activate_module

    return activate_module(ports.kube, inputs)


def _delete_cache_entry(
    inputs: dict[str, Any], ports: EffectPorts, request_uid: str
) -> tuple[bool, str]:
    from magicstick_host.effects.model_cache import delete_cache_entry

    identity = inputs["rootIdentity"]
    out = delete_cache_entry(
        ports.hostfs.root, str(inputs["root"]), str(inputs["entry"]),
        (int(identity[0]), int(identity[1])),
    )
    return out.ok, f"{out.detail} ({out.freed_bytes} bytes freed)"


def _sweep_shared_blobs(
    inputs: dict[str, Any], ports: EffectPorts, request_uid: str
) -> tuple[bool, str]:
    from magicstick_host.effects.model_cache_shared import sweep_shared_blobs

    identity = inputs["rootIdentity"]
    out = sweep_shared_blobs(
        ports.hostfs.root, str(inputs["root"]), (int(identity[0]), int(identity[1])),
        [str(name) for name in inputs["blobs"]],
    )
    return out.ok, out.detail


EFFECTS: dict[str, Effect] = {
    "schedule-shutdown": _shutdown,
    "install-packages": _install_packages,
    "write-ttm-config": _write_ttm,
    "write-carveout": _write_carveout,
    "refresh-gpu-evidence": _refresh,
    "activate-module": _activate,
    "delete-cache-entry": _delete_cache_entry,
    "sweep-shared-blobs": _sweep_shared_blobs,
}
EFFECTS.update({step: _network(step) for step in NETWORK_STEPS})


def perform(
    step: str, inputs: dict[str, Any], ports: EffectPorts, request_uid: str
) -> tuple[bool, str]:
    effect = EFFECTS.get(step)
    if effect is None:
        raise ValueError(f"no effect named {step!r}")
    return effect(inputs, ports, request_uid)
