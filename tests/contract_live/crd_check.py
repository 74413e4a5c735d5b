"""An installed HostOperation CRD against the shipped one, field by field.

The whole `spec` of the shipped manifest (names, scope, versions, subresources, printer columns,
the schema with its patterns, bounds, enums and the twelve CEL rules with their messages) is
what the contract needs: stricter or looser breaks parity with the dashboard. Only what the
server fills in itself when the manifest leaves it out (`conversion: {strategy: None}`) is not
a difference. The CRD is never replaced: differences are reported, one line each.
"""

from __future__ import annotations

import json
from typing import Any

# what the API server sets when a manifest leaves it out
SERVER_DEFAULTS: dict[str, Any] = {"conversion": {"strategy": "None"}}


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 160 else text[:157] + "..."


def _keyed(items: list[Any]) -> dict[str, Any] | None:
    """Lists of named entries (versions, printer columns) compare by name, not position."""
    if items and all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in items):
        names = [i["name"] for i in items]
        if len(set(names)) == len(names):
            return {i["name"]: i for i in items}
    return None


def _diff(path: str, expected: Any, found: Any, out: list[str]) -> None:
    if isinstance(expected, dict) and isinstance(found, dict):
        for key in sorted(set(expected) | set(found)):
            here = f"{path}.{key}" if path else key
            if key not in found:
                out.append(f"{here}: missing (the contract needs {_short(expected[key])})")
            elif key not in expected:
                out.append(f"{here}: not in the contract (the cluster has {_short(found[key])})")
            else:
                _diff(here, expected[key], found[key], out)
        return
    if isinstance(expected, list) and isinstance(found, list):
        by_name, found_by_name = _keyed(expected), _keyed(found)
        if by_name is not None and found_by_name is not None:
            _diff(path, by_name, found_by_name, out)
            return
        for index in range(max(len(expected), len(found))):
            here = f"{path}[{index}]"
            if index >= len(found):
                out.append(f"{here}: missing (the contract needs {_short(expected[index])})")
            elif index >= len(expected):
                out.append(f"{here}: not in the contract (the cluster has "
                           f"{_short(found[index])})")
            else:
                _diff(here, expected[index], found[index], out)
        return
    if expected != found or type(expected) is not type(found):
        out.append(f"{path}: the contract has {_short(expected)}, the cluster has {_short(found)}")


def differences(shipped: dict[str, Any], served: dict[str, Any]) -> list[str]:
    """One line per field where the served CRD's spec differs from the shipped one."""
    found = dict(served.get("spec") or {})
    expected = dict(shipped["spec"])
    for key, default in SERVER_DEFAULTS.items():
        if key not in expected and found.get(key) == default:
            found.pop(key)
    out: list[str] = []
    if served.get("metadata", {}).get("name") != shipped["metadata"]["name"]:
        out.append(f"metadata.name: the contract has {shipped['metadata']['name']!r}")
    _diff("spec", expected, found, out)
    return out


def established(served: dict[str, Any]) -> bool:
    conditions = (served.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)
