"""Is the AMD host driver ready on one Strix Halo device? (operations.md, prepare-gpu step 4)"""

from __future__ import annotations

from magicstick_host.domain.evidence import GFX1151_TARGET_VERSION, Evidence, PciDevice


def _render_minors(device: PciDevice) -> set[int]:
    minors: set[int] = set()
    for node in device.render_nodes:
        suffix = node.removeprefix("renderD")
        if node.startswith("renderD") and suffix.isdigit():
            minors.add(int(suffix))
    return minors


def amd_host_driver_ready(ev: Evidence, device: PciDevice) -> tuple[bool, str]:
    """(ready, reason). Every part must be seen on *this* device, not on any GPU of the host."""
    where = f"the Strix Halo GPU at {device.address}"
    if not device.is_strix_halo:
        return False, f"{device.address} ({device.pci_id}) is not a Strix Halo GPU"
    if device.driver != "amdgpu":
        bound = device.driver or "no driver"
        return False, f"{where} is not bound to amdgpu ({bound} is bound)"
    minors = _render_minors(device)
    if not minors:
        return False, f"{where} has no render node (renderD*)"
    # the collector's field names for the KFD topology; either spelling blocks the same way
    kfd_unknown = ev.unknown("kfd_nodes") + ev.unknown("kfd")
    gfx_nodes = [n for n in ev.kfd_nodes if n.gfx_target_version == GFX1151_TARGET_VERSION]
    if not any(n.drm_render_minor in minors for n in gfx_nodes):
        if kfd_unknown:
            return False, f"the KFD topology could not be read ({kfd_unknown[0].reason})"
        if gfx_nodes:
            return False, (
                f"no KFD node with gfx target {GFX1151_TARGET_VERSION} belongs to {where} "
                f"(render nodes {', '.join(sorted(device.render_nodes))})"
            )
        return False, f"no KFD node with gfx target {GFX1151_TARGET_VERSION} (gfx1151) exists"
    if not ev.dev_kfd:
        dev_unknown = ev.unknown("dev_kfd")
        if dev_unknown:
            return False, f"whether /dev/kfd exists could not be read ({dev_unknown[0].reason})"
        return False, "/dev/kfd is missing"
    return True, f"the amdgpu driver is ready on {where} (gfx1151, /dev/kfd present)"
