"""The one bounded JSON decoder: everything decoded from outside goes through it. Pure.

Python's `json` accepts things a hostile input may hold and fails on others in ways a caller
does not expect:
- deep nesting raises RecursionError (not ValueError) and, even below the interpreter's limit,
  every later recursive walk (schema validation, canonical digests, `json.dumps`) can hit it;
- a huge or very wide document costs memory and time in every later walk;
- `NaN`/`Infinity` (and `1e999`, which reads as infinity) are not JSON, and `json.dumps(...,
  allow_nan=False)` fails on them later;
- a lone surrogate escape (`"\\ud800"`) decodes to a string that cannot be encoded as UTF-8
  again, so writing it anywhere fails later;
- a duplicate key silently keeps the last value (two readers may disagree on what a file says).

`loads_bounded(data, *, max_bytes, max_depth, max_items)` turns each of these into a ValueError
with a one-line reason, and never raises anything else for any `bytes` or `str`. The limits:
- `max_bytes`: the size of the input (UTF-8 bytes; characters for a `str`), checked first;
- `max_depth`: how deep the deepest value sits (a scalar document is 0, `{"a": 1}` 1, `[[]]` 1);
- `max_items`: the number of values inside containers, all levels together (the members of
  every object and the elements of every array);
- `unique_keys=True` also refuses duplicate keys (it costs a Python call per object: the state
  files use it, the Kubernetes answers, whose server never repeats a key, do not).
It decodes with the C decoder and then walks the result once, iteratively, level by level.

`Bounds` names a set of limits; the presets below are the ones the worker decodes with
(`KUBE_ANSWER.loads(raw)`). `loads_strict` is the state files' reading (unique keys, 64 levels).
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

# far deeper than any state, journal entry or legacy file this worker writes or reads (≈10)
MAX_DEPTH = 64
STRICT_MAX_BYTES = 64 * 1024 * 1024
STRICT_MAX_ITEMS = 4_000_000


class Bounds:
    """A named set of limits for `loads_bounded`."""

    __slots__ = ("max_bytes", "max_depth", "max_items", "unique_keys")

    def __init__(self, *, max_bytes: int, max_depth: int, max_items: int,
                 unique_keys: bool = False) -> None:
        self.max_bytes = max_bytes
        self.max_depth = max_depth
        self.max_items = max_items
        self.unique_keys = unique_keys

    def loads(self, data: bytes | str) -> Any:
        return loads_bounded(data, max_bytes=self.max_bytes, max_depth=self.max_depth,
                             max_items=self.max_items, unique_keys=self.unique_keys)


# A Kubernetes answer: one object or one page of a list (ports/kube.py). The lean transport
# refuses bodies over 32 MiB already; an object nests ≈15 levels (a Pod's managedFields), a
# list page two more; 250 Pods of a page are ≈100k values.
KUBE_ANSWER = Bounds(max_bytes=32 * 1024 * 1024, max_depth=100, max_items=2_000_000)
# the report annotation the worker reads back (domain/report_policy.py, at most 32 KiB)
REPORT = Bounds(max_bytes=256 * 1024, max_depth=32, max_items=65_536)
# what a command prints as JSON (`ip -j`, ...): a host's own tools, still bounded
COMMAND_OUTPUT = Bounds(max_bytes=16 * 1024 * 1024, max_depth=32, max_items=1_000_000)
# the state directory's caches (ports/model_cache_store.py) and memos (ports/command_memo.py)
# (the model-cache inventory records up to 100,000 directories in at most 32 MiB)
CACHE_FILE = Bounds(max_bytes=32 * 1024 * 1024, max_depth=MAX_DEPTH, max_items=4_000_000)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:32]} is out of range")
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for key, value in pairs:
        if key in doc:
            raise ValueError(f"duplicate key {key[:64]!r}")
        doc[key] = value
    return doc


def _check_shape(doc: Any, max_depth: int, max_items: int) -> None:
    """ValueError when a value sits deeper than `max_depth` or the containers hold more than
    `max_items` values. Iterative, one level at a time."""
    if type(doc) is not dict and type(doc) is not list:
        return
    level: list[Any] = [doc]
    depth = items = 0
    while level:
        depth += 1  # the values held by this level's containers sit at `depth`
        below: list[Any] = []
        for node in level:
            values = node.values() if type(node) is dict else node
            if not values:
                continue
            if depth > max_depth:
                raise ValueError(f"nested deeper than {max_depth} levels")
            items += len(values)
            if items > max_items:
                raise ValueError(f"more than {max_items} values")
            for value in values:
                kind = type(value)
                if kind is dict or kind is list:
                    below.append(value)
        level = below


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


def loads_bounded(data: bytes | str, *, max_bytes: int, max_depth: int, max_items: int,
                  unique_keys: bool = False) -> Any:
    """Decode one JSON document within the limits (module docstring); ValueError otherwise."""
    if isinstance(data, str):
        if len(data) > max_bytes:
            raise ValueError(f"larger than {max_bytes} bytes")
        try:
            data.encode("utf-8")  # C speed; a lone surrogate here cannot be written anywhere
        except UnicodeEncodeError:
            raise ValueError("not UTF-8 text (a lone surrogate)") from None
        text = data
    elif isinstance(data, (bytes, bytearray, memoryview)):
        if len(data) > max_bytes:
            raise ValueError(f"larger than {max_bytes} bytes")
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"not UTF-8: {exc}") from None
    else:
        raise ValueError(f"not JSON text but {type(data).__name__}")
    try:
        doc = json.loads(
            text,
            object_pairs_hook=_no_duplicates if unique_keys else None,
            parse_constant=_reject_constant,
            parse_float=_finite,
        )
    except RecursionError:
        raise ValueError(f"nested deeper than {max_depth} levels") from None
    except ValueError as exc:  # JSONDecodeError, the hooks' own errors, too many digits
        raise ValueError(" ".join(str(exc).split())[:200]) from None
    _check_shape(doc, max_depth, max_items)
    if ("\\ud" in text or "\\uD" in text) and _has_lone_surrogate(doc):
        raise ValueError("a string holds a lone surrogate (not UTF-8 text)")
    return doc


def _has_lone_surrogate(doc: Any) -> bool:
    # only when the text has a surrogate escape: a pair decodes to one character, which
    # encodes; a lone one does not
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, RecursionError):  # the latter only for a max_depth near 1000
        return True
    return False


def loads_strict(data: bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse UTF-8 JSON bytes; ValueError for anything a state file must not be."""
    return loads_bounded(data, max_bytes=STRICT_MAX_BYTES, max_depth=max_depth,
                         max_items=STRICT_MAX_ITEMS, unique_keys=True)
