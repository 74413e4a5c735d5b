"""JSON as the state files must be: one reading, never a guess. Pure.

Python's `json` accepts things a state file must not contain and fails on others in ways a
caller does not expect:
- a duplicate key silently keeps the last value (two readers may disagree on what the file says);
- `NaN`/`Infinity` are not JSON;
- deep nesting raises RecursionError (not ValueError) and, even below the interpreter's limit,
  every later recursive walk (schema validation, canonical digests, `json.dumps`) can hit it.
`loads_strict` turns each of these into a ValueError with a one-line reason.
"""

from __future__ import annotations

import json

from magicstick_host.static import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

# far deeper than any state, journal entry or legacy file this worker writes or reads (≈10)
MAX_DEPTH = 64


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for key, value in pairs:
        if key in doc:
            raise ValueError(f"duplicate key {key[:64]!r}")
        doc[key] = value
    return doc


def nesting_depth(doc: Any) -> int:
    """The nesting depth of a JSON value (a scalar is 0), without recursion."""
    deepest, pending = 0, [(doc, 0)]
    while pending:
        node, depth = pending.pop()
        deepest = max(deepest, depth)
        if isinstance(node, dict):
            pending.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            pending.extend((child, depth + 1) for child in node)
    return deepest


def loads_strict(data: bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse UTF-8 JSON bytes; ValueError for anything a state file must not be."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8: {exc}") from None
    try:
        doc = json.loads(
            text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant
        )
    except RecursionError:
        raise ValueError(f"nested deeper than {max_depth} levels") from None
    except ValueError as exc:  # JSONDecodeError, and the hooks' own errors
        raise ValueError(str(exc)) from None
    if nesting_depth(doc) > max_depth:
        raise ValueError(f"nested deeper than {max_depth} levels")
    return doc
