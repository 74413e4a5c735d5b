"""The JSON Schemas that ship with the package, and one validator entry point.

Cross-file references (`urn:magicstick-host:<name>#/$defs/...`) are inlined at load time.
`errors` validates with the compiled validator (`compiled.py`: plain closures, nothing to import
on the tick's hot path); `validator` is jsonschema's, the reference that the tests hold the
compiled one to, and it needs nothing newer than Ubuntu 24.04's jsonschema 4.10.
"""

from __future__ import annotations

import json
import os
from functools import cache
from typing import TYPE_CHECKING

from magicstick_host.schemas.compiled import compile_schema

if TYPE_CHECKING:
    from typing import Any

    from jsonschema import Draft202012Validator

    from magicstick_host.schemas.compiled import Check

URN_PREFIX = "urn:magicstick-host:"


@cache
def _document(name: str) -> dict[str, Any]:
    # beside this module (importlib.resources would cost every tick ~10 ms to import, pathlib 6)
    with open(os.path.join(os.path.dirname(__file__), f"{name}.schema.json"),
              encoding="utf-8") as file:
        text = file.read()
    doc: dict[str, Any] = json.loads(text)
    return doc


def _pointer(doc: dict[str, Any], fragment: str) -> Any:
    node: Any = doc
    for part in fragment.lstrip("/").split("/"):
        if part:
            node = node[part]
    return node


def _inline(node: Any, doc_name: str) -> Any:
    """Replace every $ref by its target, so the result is self-contained (no recursion)."""
    if isinstance(node, list):
        return [_inline(item, doc_name) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        target_doc, _, fragment = ref.partition("#")
        name = target_doc.removeprefix(URN_PREFIX) if target_doc else doc_name
        resolved = _inline(_pointer(_document(name), fragment), name)
        siblings = {k: _inline(v, doc_name) for k, v in node.items() if k != "$ref"}
        return {**resolved, **siblings} if siblings else resolved
    return {k: _inline(v, doc_name) for k, v in node.items() if k != "$defs"}


@cache
def validator(name: str) -> Draft202012Validator:
    """jsonschema's validator (the reference); `name` is the file stem, e.g. "inspect"."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(_inline(_document(name), name))


@cache
def compiled_validator(name: str) -> Check:
    return compile_schema(_inline(_document(name), name))


def errors(name: str, instance: Any) -> list[str]:
    """Every violation as `path: message`, empty when valid."""
    found = sorted(compiled_validator(name)(instance, ()), key=lambda e: [str(p) for p in e[0]])
    return [f"{'/'.join(str(p) for p in path) or '(root)'}: {message}" for path, message in found]


_RECORD_CHECKS: dict[int, tuple[dict[str, Any], Check]] = {}


def errors_against(schema: dict[str, Any], instance: Any) -> list[str]:
    """`errors` for a schema built in code (a typed record's, domain/records.py)."""
    held = _RECORD_CHECKS.get(id(schema))
    if held is None or held[0] is not schema:
        held = (schema, compile_schema(schema))
        _RECORD_CHECKS[id(schema)] = held
    found = sorted(held[1](instance, ()), key=lambda e: [str(p) for p in e[0]])
    return [f"{'/'.join(str(p) for p in path) or '(root)'}: {message}" for path, message in found]
