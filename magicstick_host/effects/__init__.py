"""Effects: each performs exactly what a RunStep says, through one port, and decides nothing.

`EFFECTS` maps a step name (an operation declares the steps it runs: `OperationKind.steps`) to
the effect that performs it; adding a step is one effect module and one line here. The
network trial's steps (magicstick_host/network/step_effects.py) are not here: they record the
trial's stage around their effects, and the composition root (app.py, `step_effects`) adds
them to this table for the tick, so that neither package imports the other. `perform`
returns (ok, detail) and never retries. An exception escaping it (a crash, a bug) leaves the
step's intent without an outcome, which the next tick classifies.

Each effect's module is imported when its step runs: the timer's idle ticks run none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

# the ports and the signature of an effect, shared with the network trial's steps
from magicstick_host.effects.effect_ports import EffectPorts

if TYPE_CHECKING:
    from typing import Any

    from magicstick_host.effects.effect_ports import Effect

__all__ = ["EFFECTS", "EffectPorts", "perform"]


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


def perform(
    effects: Mapping[str, Effect], step: str, inputs: dict[str, Any], ports: EffectPorts,
    request_uid: str,
) -> tuple[bool, str]:
    """Run `step` with the effect `effects` (the composition root's table) names for it."""
    effect = effects.get(step)
    if effect is None:
        raise ValueError(f"no effect named {step!r}")
    return effect(inputs, ports, request_uid)
