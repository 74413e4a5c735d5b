"""Effects: each performs exactly what a RunStep says, through one port, and decides nothing.

`EFFECTS` maps a step name (an operation declares the steps it runs: `OperationKind.steps`) to
the effect that performs it; adding a step is one effect module and one line here. `perform`
returns (ok, detail) and never retries. An exception escaping it (a crash, a bug) leaves the
step's intent without an outcome, which the next tick classifies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from magicstick_host.effects.gpu_evidence import refresh_gpu_evidence
from magicstick_host.effects.module import activate_module
from magicstick_host.effects.playbook import run_playbook
from magicstick_host.effects.shutdown import schedule_shutdown
from magicstick_host.effects.sysfs import write_carveout
from magicstick_host.ports.hostfs import RootedHostFS
from magicstick_host.ports.kube import KubePort
from magicstick_host.ports.runner import CommandRunner


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


# (the step's inputs, the ports, the request UID) -> (ok, detail)
Effect = Callable[[dict[str, Any], EffectPorts, str], tuple[bool, str]]


def _shutdown(inputs: dict[str, Any], ports: EffectPorts, request_uid: str) -> tuple[bool, str]:
    return schedule_shutdown(
        ports.runner, str(inputs["mode"]), int(inputs["delayMinutes"]), str(inputs["text"])
    )


def _install_packages(
    inputs: dict[str, Any], ports: EffectPorts, request_uid: str
) -> tuple[bool, str]:
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
    return write_carveout(ports.hostfs, str(inputs["pciAddress"]), int(inputs["index"]))


def _refresh(inputs: dict[str, Any], ports: EffectPorts, request_uid: str) -> tuple[bool, str]:
    return refresh_gpu_evidence(ports.runner, str(inputs["path"]), float(inputs["timeoutSeconds"]))


def _activate(inputs: dict[str, Any], ports: EffectPorts, request_uid: str) -> tuple[bool, str]:
    return activate_module(ports.kube, inputs)


EFFECTS: dict[str, Effect] = {
    "schedule-shutdown": _shutdown,
    "install-packages": _install_packages,
    "write-ttm-config": _write_ttm,
    "write-carveout": _write_carveout,
    "refresh-gpu-evidence": _refresh,
    "activate-module": _activate,
}


def perform(
    step: str, inputs: dict[str, Any], ports: EffectPorts, request_uid: str
) -> tuple[bool, str]:
    effect = EFFECTS.get(step)
    if effect is None:
        raise ValueError(f"no effect named {step!r}")
    return effect(inputs, ports, request_uid)
