"""Write the firmware carve-out choice: one sysfs value, under the host root."""

from __future__ import annotations

from magicstick_host.ports.hostfs import HostReadError, RootedHostFS


def write_carveout(fs: RootedHostFS, pci_address: str, index: int) -> tuple[bool, str]:
    path = f"/sys/bus/pci/devices/{pci_address}/uma/carveout"
    try:
        fs.write_value(path, f"{index}\n")
    except HostReadError as exc:
        return False, f"writing {path} failed: {exc.reason}"
    return True, f"wrote {index} to {path}"
