"""Effects: each performs exactly what a RunStep says, through one port, and decides nothing.

`perform` returns (ok, detail) and never retries. An exception escaping it (a crash, a bug)
leaves the step's intent without an outcome, which the next tick classifies.
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


def perform(
    step: str, inputs: dict[str, Any], ports: EffectPorts, request_uid: str
) -> tuple[bool, str]:
    if step == "schedule-shutdown":
        return schedule_shutdown(
            ports.runner, str(inputs["mode"]), int(inputs["delayMinutes"]), str(inputs["text"])
        )
    if step == "install-packages":
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
    if step == "write-ttm-config":
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
    if step == "write-carveout":
        return write_carveout(ports.hostfs, str(inputs["pciAddress"]), int(inputs["index"]))
    if step == "refresh-gpu-evidence":
        return refresh_gpu_evidence(
            ports.runner, str(inputs["path"]), float(inputs["timeoutSeconds"])
        )
    if step == "activate-module":
        return activate_module(ports.kube, inputs)
    raise ValueError(f"no effect named {step!r}")
