"""Evidence as JSON: camelCase keys like the rest of the machine output (contract.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host import lite_dataclasses as dataclasses
from magicstick_host.domain.evidence import Evidence

if TYPE_CHECKING:
    from typing import Any


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def to_json(value: Any) -> Any:
    """Dataclasses, tuples and dicts to JSON-ready values, dataclass fields camelCased."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {camel(f.name): to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    return value


def evidence_to_json(ev: Evidence) -> dict[str, Any]:
    doc = to_json(ev)
    assert isinstance(doc, dict)
    # the raw network evidence holds the netplan files, Wi-Fi keys included: never printed
    # (the `network` section says what may be shown)
    doc.pop("network", None)
    # derived values a reader would otherwise recompute by hand
    doc["pci"]["displayGpus"] = list(ev.pci.display_ids)
    doc["memory"]["memTotalMi"] = ev.memory.mem_total_mi
    doc["ttm"]["activeLimitMi"] = ev.ttm.active_limit_mi
    return doc
