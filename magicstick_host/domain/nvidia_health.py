"""The NVIDIA side's health, as `inspect` and the host report show it (convergence.md).

Pure. The GPU Operator's CDI specs mount `/run/nvidia-persistenced/socket` into every NVIDIA
container, so an inactive daemon (or a missing socket) stops new model containers even while
`nvidia-smi` looks healthy. The administrator checks this section before touching the GPU
Operator, as the appliance documentation tells them to.

`state`:
- `absent`: no NVIDIA display controller (a VGA-compatible controller, class 0x0300, vendor
  10de; domain/convergence/display.py): nothing to check. NVIDIA 3D controllers (H100/H200)
  keep the GPU Operator's own driver path, which this section does not judge;
- `healthy`: every NVIDIA display GPU is bound to `nvidia`, the daemon is active and its socket
  is a socket;
- `degraded`: one of those is false (the message says which, and what to run);
- `unknown`: something could not be read; never reported as healthy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.convergence.display import nvidia_compute_gpus, nvidia_display_gpus
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.text import clip_message

if TYPE_CHECKING:
    from typing import Any

PERSISTENCED_SOCKET = "/run/nvidia-persistenced/socket"
_WHY = (
    "the GPU Operator's CDI specs mount its socket into every NVIDIA container, so new model "
    "containers cannot start even though nvidia-smi may look healthy"
)


def _bound_problem(unbound: list[tuple[str, str | None]]) -> str:
    parts = [
        f"{address} is {'bound to ' + driver if driver else 'not bound to any driver'}"
        for address, driver in unbound
    ]
    return (
        f"The NVIDIA GPU {'; '.join(parts)}, not to the nvidia driver: host convergence "
        "installs the reviewed driver and the reboot after it loads it."
    )


def nvidia_health(ev: Evidence) -> dict[str, Any]:
    """The `nvidia` section of inspect and of the Node report."""
    gpus = nvidia_display_gpus(ev.pci)
    nv = ev.nvidia
    compute = [d.address for d in nvidia_compute_gpus(ev.pci)]
    absent = "No NVIDIA display GPU on this host." if not compute else (
        "No NVIDIA display GPU on this host: the NVIDIA 3D controllers "
        f"{', '.join(compute)} keep the GPU Operator's own driver path."
    )
    section: dict[str, Any] = {
        "state": "absent",
        "message": absent[:2048],
        "gpus": [{"pciAddress": d.address, "driver": d.driver or ""} for d in gpus],
        "driverBound": None,
        "driverVersion": nv.driver_version or "",
        "persistencedActive": None,
        "persistencedSocket": None,
    }
    if not gpus:
        return section
    unbound = [(d.address, d.driver) for d in gpus if d.driver != "nvidia"]
    socket_kind = nv.persistenced_socket_kind
    section.update(
        driverBound=not unbound,
        persistencedActive=nv.persistenced_active,
        persistencedSocket=None if socket_kind == "unknown" else socket_kind == "socket",
    )
    problems: list[str] = []
    unknowns: list[str] = []
    if unbound:
        problems.append(_bound_problem(unbound))
    if nv.persistenced_active is False:
        problems.append(
            "nvidia-persistenced is not active (`systemctl is-active nvidia-persistenced`): "
            f"{_WHY}. Run `systemctl start nvidia-persistenced` once `nvidia-smi -L` lists "
            "the GPU."
        )
    elif nv.persistenced_active is None:
        why = "; ".join(u.reason for u in ev.unknown("nvidia.persistenced_active"))
        unknowns.append(
            "Whether nvidia-persistenced is active could not be told"
            + (f" ({why})" if why else "")
            + "."
        )
    if socket_kind in ("missing", "other"):
        what = "is missing" if socket_kind == "missing" else "is there but is not a socket"
        fix = (
            "restart it: `systemctl restart nvidia-persistenced`"
            if nv.persistenced_active
            else "start nvidia-persistenced first"
        )
        problems.append(f"{PERSISTENCED_SOCKET} {what}: {_WHY}; {fix}.")
    elif socket_kind == "unknown":
        why = "; ".join(u.reason for u in ev.unknown("nvidia.persistenced_socket"))
        unknowns.append(
            f"Whether {PERSISTENCED_SOCKET} is a socket could not be told"
            + (f" ({why})" if why else "")
            + "."
        )
    if problems:
        section.update(state="degraded", message=" ".join(problems + unknowns))
    elif unknowns:
        section.update(state="unknown", message=" ".join(unknowns))
    else:
        version = f" {nv.driver_version}" if nv.driver_version else ""
        count = f"{len(gpus)} GPU" + ("s" if len(gpus) > 1 else "")
        section["state"] = "healthy"
        section["message"] = (
            f"The NVIDIA driver{version} is bound to {count}; nvidia-persistenced is active and "
            f"{PERSISTENCED_SOCKET} is present."
        )
    section["message"] = clip_message(section["message"])
    return section
