"""Which NVIDIA GPUs make a host an NVIDIA display host (convergence.md). Pure.

An NVIDIA display host has an NVIDIA VGA-compatible controller: PCI class 0x0300, vendor 10de.
Host convergence gives only such a host the reviewed display driver, nvidia-drm with the
console, the K3s label and nvidia-persistenced, and the worker reports their health. An NVIDIA
3D controller (class 0x0302: H100/H200-class compute GPUs, no display outputs; the console is
the BMC's VGA) is no display host: it keeps the GPU Operator's own driver path, like CPU-only
and AMD-only hosts. The playbook reads the same rule from sysfs itself
(playbooks/roles/converge/files/host_facts.py); a test holds both to one verdict.
"""

from __future__ import annotations

from magicstick_host.domain.evidence import NVIDIA_VENDOR, PciDevice, PciInventory

VGA_CLASS = "0300"  # base class 0x03 display, subclass 0x00 VGA-compatible


def is_nvidia_display(vendor: str, pci_class: str) -> bool:
    """`vendor`: 4 lowercase hex digits; `pci_class`: 6 (no 0x)."""
    return vendor == NVIDIA_VENDOR and pci_class.startswith(VGA_CLASS)


def nvidia_display_gpus(pci: PciInventory) -> tuple[PciDevice, ...]:
    return tuple(d for d in pci.devices if is_nvidia_display(d.vendor, d.pci_class))


def nvidia_compute_gpus(pci: PciInventory) -> tuple[PciDevice, ...]:
    """NVIDIA display-class devices that are not VGA-compatible (3D controllers and others):
    the GPU Operator's."""
    return tuple(
        d for d in pci.devices
        if d.vendor == NVIDIA_VENDOR and d.is_display and not is_nvidia_display(d.vendor,
                                                                              d.pci_class)
    )
