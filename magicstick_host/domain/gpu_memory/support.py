"""Is configure-gpu-memory supported on this host, and what are its current values?

Split from gpu_memory.py: this part reads evidence into `SupportFacts`; the first support rule
that fails (operations.md, "configure-gpu-memory") becomes `problem`.
"""

from __future__ import annotations

from collections.abc import Iterator

from magicstick_host.domain.evidence import (
    AMD_VENDOR,
    INTEL_VENDOR,
    MANAGED_TTM_FILE,
    NVIDIA_VENDOR,
    CarveoutOption,
    Evidence,
    PciDevice,
)
from magicstick_host.domain.fingerprint import inventory_unknowns
from magicstick_host.lite_dataclasses import dataclass, replace

SUPPORTED_OS = (("ubuntu", "24.04"), ("ubuntu", "26.04"))
MAX_OPTIONS = 19
_MIB = 1024 * 1024


@dataclass(frozen=True)
class SupportFacts:
    problem: str | None  # None: supported
    pci_address: str | None = None
    options: tuple[CarveoutOption, ...] = ()
    current_index: int | None = None
    current_carveout_mi: int | None = None
    current_limit_mi: int | None = None
    system_memory_mi: int | None = None
    pending_index: int | None = None


def _why(ev: Evidence, path: str) -> str:
    unknown = ev.unknown(path)
    return f" ({unknown[0].reason})" if unknown else ""


def _options_problem(options: tuple[CarveoutOption, ...]) -> str | None:
    if not options or len(options) > MAX_OPTIONS:
        return f"the firmware lists {len(options)} reservation options"
    indexes = [o.index for o in options]
    sizes = [o.size_mi for o in options]
    if len(set(indexes)) != len(indexes) or len(set(sizes)) != len(sizes):
        return "the firmware reservation options repeat an index or a size"
    if any(o.size_mi <= 0 or not 0 <= o.index <= 255 for o in options):
        return "a firmware reservation option has an invalid index or size"
    return None


def _other_gpu_problems(others: list[PciDevice]) -> Iterator[str]:
    """Hard problems first; an NVIDIA GPU still waiting for its driver comes last."""
    waiting: list[str] = []
    for dev in others:
        name = f"{dev.pci_id} at {dev.address}"
        if dev.vendor == NVIDIA_VENDOR:
            if dev.driver is None:
                waiting.append(f"the NVIDIA GPU {name} is waiting for the companion driver")
            elif dev.driver != "nvidia":
                yield f"the NVIDIA GPU {name} is bound to {dev.driver}, not nvidia"
        elif dev.vendor == AMD_VENDOR:
            yield f"a second AMD GPU ({name}) shares the system-wide TTM limit"
        elif dev.vendor == INTEL_VENDOR:
            yield f"an Intel GPU ({name}) shares the system-wide TTM limit"
        else:
            yield f"a GPU of an unknown vendor ({name}) shares the system-wide TTM limit"
    yield from waiting


def _ttm_problem(ev: Evidence) -> str | None:
    ttm = ev.ttm
    if ev.unknown("ttm"):
        return f"the TTM settings could not be read{_why(ev, 'ttm')}"
    if ttm.module is None:
        return "it is unknown which TTM module amdgpu uses"
    if ttm.module != "ttm":
        return f"amdgpu uses the out-of-tree {ttm.module} module, not the in-tree ttm"
    if ttm.pages_limit is None:
        return "the active ttm pages_limit could not be read"
    if ttm.amdgpu_gttsize is None:
        return "amdgpu's gttsize parameter could not be read"
    if ttm.amdgpu_gttsize != -1:
        return f"amdgpu.gttsize is set ({ttm.amdgpu_gttsize}); it competes with the TTM limit"
    if ttm.overrides:
        first = ttm.overrides[0]
        return f"a competing override in {first.source} ({first.text})"
    if ttm.managed_file_present and ttm.managed_pages_limit != ttm.pages_limit:
        return (
            f"{MANAGED_TTM_FILE} does not match the active pages_limit {ttm.pages_limit} "
            f"(it holds {ttm.managed_pages_limit}); a restart may be pending"
        )
    return None


def _device_problem(ev: Evidence, facts: SupportFacts) -> tuple[str | None, SupportFacts]:
    """Checks the Strix Halo device and its reservation; fills the values it could read."""
    strix = ev.pci.strix_halo
    if len(strix) != 1:
        return f"{len(strix)} Strix Halo GPUs are present, exactly one is needed", facts
    device = strix[0]
    facts = replace(facts, pci_address=device.address)
    if device.driver != "amdgpu":
        return f"the Strix Halo GPU is not bound to amdgpu ({device.driver or 'unbound'})", facts
    for problem in _other_gpu_problems([d for d in ev.pci.devices if not d.is_strix_halo]):
        return problem, facts
    if device.uma is None:
        return "this firmware offers no reservation control (no uma/)", facts
    if device.uma.options is None:
        return "the firmware reservation options could not be parsed", facts
    options = tuple(sorted(device.uma.options, key=lambda o: o.index))
    bad_options = _options_problem(options)
    if bad_options is not None:
        return bad_options, facts  # options the dashboard must not offer are not published
    facts = replace(facts, options=options)
    selected = device.uma.selected_index
    chosen = next((o for o in options if o.index == selected), None)
    if chosen is None:
        return f"the selected reservation index {selected} is not a listed option", facts
    vram = device.vram_total_bytes
    if vram is None:
        return "the active reservation (mem_info_vram_total) could not be read", facts
    active_mi = vram // _MIB
    facts = replace(facts, current_carveout_mi=active_mi)
    if vram != chosen.size_mi * _MIB:
        # `uma/carveout` reads back the choice for the next boot; vram_total is what is active
        matching = [o.index for o in options if o.size_mi * _MIB == vram]
        facts = replace(
            facts,
            current_index=matching[0] if len(matching) == 1 else None,
            pending_index=chosen.index,
        )
        return (
            f"a firmware change to option {chosen.index} ({chosen.size_mi} MiB) is pending a "
            f"restart (active: {active_mi} MiB); new memory requests wait until then",
            facts,
        )
    return None, replace(facts, current_index=chosen.index)


def support_facts(ev: Evidence) -> SupportFacts:
    facts = SupportFacts(
        None, current_limit_mi=ev.ttm.active_limit_mi, system_memory_mi=ev.memory.mem_total_mi
    )
    problem: str | None = None
    os_unknown = ev.unknown("os.id") + ev.unknown("os.version_id")
    os_unknown += tuple(u for u in ev.unknowns if u.field == "os")
    if os_unknown or not ev.os.id or not ev.os.version_id:
        why = f" ({os_unknown[0].reason})" if os_unknown else ""
        problem = f"the OS could not be identified{why}"
    elif (ev.os.id, ev.os.version_id) not in SUPPORTED_OS:
        problem = f"{ev.os.id} {ev.os.version_id} is not Ubuntu 24.04 or 26.04"
    elif not ev.pci.complete or inventory_unknowns(ev):
        pci_unknown = inventory_unknowns(ev)
        why = f" ({pci_unknown[0].reason})" if pci_unknown else ""
        problem = f"the display device inventory is incomplete{why}"
    else:
        problem, facts = _device_problem(ev, facts)
        if problem is None:
            problem = _ttm_problem(ev)
        if problem is None and (
            facts.system_memory_mi is None or ev.unknown("memory.mem_total_kib")
        ):
            problem = f"MemTotal could not be read{_why(ev, 'memory.mem_total_kib')}"
    return replace(facts, problem=problem)
