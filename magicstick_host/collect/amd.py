"""AMD-only device attributes: the UMA carve-out control and the VRAM/GTT sizes."""

from __future__ import annotations

from magicstick_host.collect.reader import Reader
from magicstick_host.domain.evidence import UmaInfo
from magicstick_host.domain.parsers.carveout import parse_carveout_index, parse_carveout_options
from magicstick_host.domain.parsers.common import parse_uint


def collect_amd_memory(
    r: Reader, base: str, field: str, driver: str | None
) -> tuple[UmaInfo | None, int | None, int | None]:
    """(uma, vram_total_bytes, gtt_total_bytes) of the AMD device at sysfs path `base`."""
    uma = _collect_uma(r, base, f"{field}.uma")
    # the mem_info_* files belong to amdgpu: an unbound or vfio-pci device has none, and
    # that is a fact rather than an unknown
    bound = driver == "amdgpu"
    vram = r.parsed(f"{base}/mem_info_vram_total", f"{field}.vram_total_bytes",
                    lambda t: parse_uint(t, "mem_info_vram_total"), optional=not bound)
    gtt = r.parsed(f"{base}/mem_info_gtt_total", f"{field}.gtt_total_bytes",
                   lambda t: parse_uint(t, "mem_info_gtt_total"), optional=not bound)
    return uma, vram, gtt


def _collect_uma(r: Reader, base: str, field: str) -> UmaInfo | None:
    uma_dir = f"{base}/uma"
    present = r.is_dir(uma_dir, field)
    if present is None:
        return UmaInfo(options=None, selected_index=None)
    if not present:
        # firmware without the control (e.g. HP Strix Halo): no fixed-reservation knob
        return None
    options = r.parsed(f"{uma_dir}/carveout_options", f"{field}.options", parse_carveout_options)
    path = f"{uma_dir}/carveout"
    selected = r.parsed(path, f"{field}.selected_index", parse_carveout_index)
    known = options is not None and selected is not None
    if known and selected not in {option.index for option in options or ()}:
        r.unknown(f"{field}.selected_index", path, f"index {selected} is not an option")
        selected = None
    return UmaInfo(options=options, selected_index=selected)
