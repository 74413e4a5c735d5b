"""Human views of machine documents. Pure string building; the JSON is the source."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any


def _gib(mi: int | None) -> str:
    if mi is None:
        return "unknown"
    if mi < 1024:
        return f"{mi} MiB"
    return f"{mi / 1024:.1f} GiB" if mi % 1024 else f"{mi // 1024} GiB"


def _host_line(ev: dict[str, Any]) -> str:
    os_ = ev["os"]
    os_name = os_.get("prettyName") or (
        f"{os_.get('id')} {os_.get('versionId')}" if os_.get("id") else "unknown OS"
    )
    kernel = ev["kernel"]
    pkg = f" (package {kernel['packageVersion']})" if kernel.get("packageVersion") else ""
    return (
        f"Host:     {os_name}, {ev.get('arch') or 'unknown architecture'}, "
        f"kernel {kernel.get('release') or 'unknown'}{pkg}"
    )


def _gpu_lines(ev: dict[str, Any]) -> list[str]:
    pci = ev["pci"]
    if not pci["devices"]:
        gpus = ["none"]
    else:
        gpus = [
            f"{d['vendor']}:{d['device']} at {d['address']} ({d['driver'] or 'no driver bound'})"
            for d in pci["devices"]
        ]
    complete = "" if pci["complete"] else "  [PCI inventory INCOMPLETE]"
    lines = [f"GPUs:     {gpus[0]}{complete}"]
    lines += [f"          {g}" for g in gpus[1:]]
    return lines


def _plan_lines(plan: dict[str, Any]) -> list[str]:
    state = plan["state"]
    lines = [f"Plan:     {state}: {plan['message']}"]
    if plan["packages"]:
        pins = ", ".join(f"{k}={v}" for k, v in sorted(plan["packages"].items()))
        lines.append(
            f"          packages {pins}; restart {'yes' if plan['rebootRequired'] else 'no'}"
        )
    lines.append(f"          plan id {plan['id']}")
    exp = plan.get("experiment")
    if exp:
        lines.append(
            f"          experiment available (id {exp['id'][:12]}…): {exp.get('message', '')}"
        )
    return lines


def _memory_line(mem: dict[str, Any]) -> str:
    if not mem["supported"]:
        return f"Memory:   GPU memory control unavailable: {mem['message']}"
    return (
        f"Memory:   carve-out {_gib(mem['currentCarveoutMi'])} "
        f"(option {mem['currentCarveoutIndex']}), dynamic limit "
        f"{_gib(mem['currentDynamicLimitMi'])}, Linux sees {_gib(mem['systemMemoryMi'])}"
    )


def render_inspection(doc: dict[str, Any]) -> str:
    ev = doc["evidence"]
    lines = [_host_line(ev)]
    if ev.get("cpuModel"):
        lines.append(f"CPU:      {ev['cpuModel']}")
    lines += _gpu_lines(ev)
    driver = doc.get("amdDriverReady")
    if driver is not None:
        state = "ready" if driver["ready"] else f"NOT ready ({driver['reason']})"
        lines.append(f"Driver:   AMD host driver {state}")
    nvidia = doc.get("nvidia")
    if nvidia and nvidia["state"] != "absent":
        flag = "" if nvidia["state"] == "healthy" else f"{nvidia['state'].upper()}: "
        lines.append(f"NVIDIA:   {flag}{nvidia['message']}")
    lines += _plan_lines(doc["plan"])
    lines.append(_memory_line(doc["gpuMemory"]))
    lines.append(f"Actions:  {', '.join(doc['actions']) or 'none right now'}")
    if doc["unknowns"]:
        lines.append(f"Unknown:  {len(doc['unknowns'])} fact(s) could not be read:")
        lines += [f"          {u['field']}: {u['reason']}" for u in doc["unknowns"][:8]]
        if len(doc["unknowns"]) > 8:
            lines.append("          … see inspect --json")
    return "\n".join(lines)
