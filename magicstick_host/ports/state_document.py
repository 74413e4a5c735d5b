"""What the bytes of state.json mean: this worker's state (schema-checked, each operation's data
as the record its action declares) or the original worker's, migrated. Raises ValueError with
a one-line reason for anything else: the state store treats that as a corrupt file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host import schemas
from magicstick_host.domain.legacy_state import is_legacy_document, migrate_legacy_state
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.records import record_schema
from magicstick_host.domain.state import State
from magicstick_host.domain.state_codec import record_type, state_from_json
from magicstick_host.domain.strict_json import loads_strict
from magicstick_host.ports.clock import Instant

if TYPE_CHECKING:
    from typing import Any


def document_errors(doc: dict[str, Any]) -> list[str]:
    """Everything wrong with a state document: its schema, and its operation's data record
    (the schema of the record its action declares, domain/records.py)."""
    problems = schemas.errors("state", doc)
    op = doc.get("operation")
    if problems or not isinstance(op, dict):
        return problems
    data = {k: v for k, v in op["data"].items() if k != "legacy"}
    kind = record_type(op["action"], data, op["data"].get("legacy"), Phase(op["phase"]))
    found = schemas.errors_against(record_schema(kind), data)
    return [f"operation/data/{problem}" for problem in found]


def parse_state(data: bytes, now: Instant) -> tuple[State, dict[str, Any] | None]:
    """The State that state.json bytes hold, and the legacy document when they are the
    original worker's (then the State is its migration). ValueError(reason): corrupt."""
    try:
        doc = loads_strict(data)
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"not a JSON object but a JSON {type(doc).__name__}")
    if is_legacy_document(doc):
        problems = schemas.errors("legacy-state", doc)
        if problems:
            raise ValueError(f"legacy state (the original worker's): schema: {problems[0]}")
        return migrate_legacy_state(doc, wall=now.wall, boottime=now.boottime), doc
    problems = document_errors(doc)
    if problems:
        raise ValueError(f"schema: {problems[0]}")
    try:
        return state_from_json(doc), None
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"unreadable state: {exc!r}") from None
