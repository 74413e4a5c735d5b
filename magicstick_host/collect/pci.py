"""The PCI display inventory: base class 0x03 devices, their drivers and DRM nodes.

A device whose vendor, device or class cannot be read might have been a GPU, so it makes the
whole inventory incomplete (NFD skips such devices; we must block instead).
"""

from __future__ import annotations

import re

from magicstick_host.collect.amd import collect_amd_memory
from magicstick_host.collect.reader import Reader
from magicstick_host.domain.evidence import AMD_VENDOR, PciDevice, PciInventory
from magicstick_host.domain.parsers.pci import (
    is_pci_address,
    parse_pci_class,
    parse_pci_id,
    parse_pci_revision,
)

PCI_DEVICES = "/sys/bus/pci/devices"
_CARD = re.compile(r"card[0-9]+")
_RENDER = re.compile(r"renderD[0-9]+")


def collect_pci(r: Reader) -> PciInventory:
    names = r.list_dir(PCI_DEVICES, "pci")
    if names is None:
        return PciInventory(devices=(), complete=False)
    complete = True
    devices: list[PciDevice] = []
    for address in names:
        if not is_pci_address(address):
            r.unknown(f"pci.devices.{address}", f"{PCI_DEVICES}/{address}", "not a PCI address")
            complete = False
            continue
        device = _collect_device(r, address)
        if device is None:
            complete = False
        elif device.is_display:
            devices.append(device)
    return PciInventory(devices=tuple(devices), complete=complete)


def _collect_device(r: Reader, address: str) -> PciDevice | None:
    """The device, or None when a mandatory attribute is missing or garbage."""
    base = f"{PCI_DEVICES}/{address}"
    field = f"pci.devices.{address}"
    vendor = r.parsed(f"{base}/vendor", f"{field}.vendor", lambda t: parse_pci_id(t, "vendor"))
    device = r.parsed(f"{base}/device", f"{field}.device", lambda t: parse_pci_id(t, "device"))
    pci_class = r.parsed(f"{base}/class", f"{field}.class", parse_pci_class)
    if vendor is None or device is None or pci_class is None:
        return None
    if not pci_class.startswith("03"):
        # not a display device: its other attributes are none of our business
        return PciDevice(address=address, vendor=vendor, device=device, pci_class=pci_class)
    driver = r.link_name(f"{base}/driver", f"{field}.driver")
    cards, render_nodes = _drm_children(r, base, field)
    uma, vram, gtt = (None, None, None)
    if vendor == AMD_VENDOR:
        uma, vram, gtt = collect_amd_memory(r, base, field, driver)
    return PciDevice(
        address=address,
        vendor=vendor,
        device=device,
        pci_class=pci_class,
        revision=r.parsed(f"{base}/revision", f"{field}.revision", parse_pci_revision,
                          optional=True),
        subsystem_vendor=r.parsed(f"{base}/subsystem_vendor", f"{field}.subsystem_vendor",
                                  lambda t: parse_pci_id(t, "subsystem_vendor"), optional=True),
        subsystem_device=r.parsed(f"{base}/subsystem_device", f"{field}.subsystem_device",
                                  lambda t: parse_pci_id(t, "subsystem_device"), optional=True),
        driver=driver,
        render_nodes=render_nodes,
        cards=cards,
        uma=uma,
        vram_total_bytes=vram,
        gtt_total_bytes=gtt,
    )


def _drm_children(r: Reader, base: str, field: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    names = r.list_dir(f"{base}/drm", f"{field}.drm", optional=True) or []
    # connectors (card1-HDMI-A-1) contain a dash and fail both patterns
    cards = tuple(n for n in names if _CARD.fullmatch(n))
    render_nodes = tuple(n for n in names if _RENDER.fullmatch(n))
    return cards, render_nodes
