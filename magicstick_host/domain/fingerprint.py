"""The hardware fingerprint and the host identity that every id in the report is bound to.

The fingerprint names the machine, not its settings: drivers (bound after a preparation) and
memory sizes (the carve-out is what configure-gpu-memory changes) are left out on purpose.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.canonical import sha256_hex
from magicstick_host.domain.evidence import Evidence, Unknown

if TYPE_CHECKING:
    from typing import Any

_SCALAR_INPUTS = ("cpu_model", "dmi_vendor", "dmi_product", "arch")
# per-device memory facts (`pci.devices.<addr>.uma...`): the carve-out is a setting, not part
# of what the inventory or the machine is
_MEMORY_ATTRIBUTES = (".uma", ".vram_total_bytes", ".gtt_total_bytes")


def inventory_unknowns(ev: Evidence) -> tuple[Unknown, ...]:
    """Unknowns about which display devices exist, what they are and which driver they have."""
    return tuple(
        u
        for u in ev.unknown("pci")
        if not any(attr in u.field.removeprefix("pci.devices.") for attr in _MEMORY_ATTRIBUTES)
    )


def hardware_fingerprint(ev: Evidence) -> str | None:
    """SHA-256 of the hardware identity; None when any part of it could not be seen."""
    if not ev.pci.complete or inventory_unknowns(ev):
        return None
    scalars: dict[str, str] = {}
    for name in _SCALAR_INPUTS:
        value = getattr(ev, name)
        if not isinstance(value, str) or not value or ev.unknown(name):
            return None
        scalars[name] = value
    devices: list[dict[str, str]] = []
    for dev in ev.pci.devices:
        identity = {
            "address": dev.address,
            "vendor": dev.vendor,
            "device": dev.device,
            "class": dev.pci_class,
            "revision": dev.revision,
            "subsystemVendor": dev.subsystem_vendor,
            "subsystemDevice": dev.subsystem_device,
        }
        if any(v is None or v == "" for v in identity.values()):
            return None
        devices.append({k: str(v) for k, v in identity.items()})
    devices.sort(key=lambda d: d["address"])
    return sha256_hex({"kind": "hardware-fingerprint/1", **scalars, "displayDevices": devices})


def host_identity(ev: Evidence) -> dict[str, Any]:
    """What every capability id binds to: this OS, this running kernel, this boot, this machine."""
    return {
        "os": {"id": ev.os.id, "versionId": ev.os.version_id},
        "arch": ev.arch,
        "kernel": {"release": ev.kernel.release, "packageVersion": ev.kernel.package_version},
        "bootId": ev.boot_id,
        "hardwareFingerprint": hardware_fingerprint(ev),
        "displayGpus": list(ev.pci.display_ids),
    }
