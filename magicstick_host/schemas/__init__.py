"""The JSON Schemas that ship with the package, and one validator entry point."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource


@cache
def _registry() -> Registry:
    registry: Registry = Registry()
    for entry in resources.files(__package__).iterdir():
        if entry.name.endswith(".schema.json"):
            doc = json.loads(entry.read_text(encoding="utf-8"))
            uri = doc.get("$id", "urn:magicstick-host:" + entry.name.removesuffix(".schema.json"))
            registry = registry.with_resource(uri, Resource.from_contents(doc))
    return registry


@cache
def validator(name: str) -> Draft202012Validator:
    """`name` is the file stem, e.g. "inspect" for inspect.schema.json."""
    doc = json.loads(resources.files(__package__).joinpath(f"{name}.schema.json").read_text())
    return Draft202012Validator(doc, registry=_registry())


def errors(name: str, instance: Any) -> list[str]:
    """Every violation as `path: message`, empty when valid."""
    found = sorted(validator(name).iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}" for e in found]
