"""The compiled validator gives jsonschema's verdict on every shipped schema.

The product validates with `magicstick_host.schemas.compiled` (cheap to import); jsonschema is
the reference. For each schema: real documents (golden inspect output, reports, states, profiles,
legacy fixtures) and many random mutations of them must get the same valid/invalid verdict, and
the same failing paths.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magicstick_host import schemas
from magicstick_host.domain.history import build_history, transition_entry
from magicstick_host.domain.legacy_state import migrate_legacy_state
from magicstick_host.domain.status_view import build_status
from magicstick_host.schemas.compiled import UnsupportedSchema, compile_schema, json_equal

REPO = Path(__file__).resolve().parents[2]
SCHEMA_NAMES = sorted(
    p.name.removesuffix(".schema.json")
    for p in (REPO / "magicstick_host/schemas").glob("*.schema.json")
)


def reference_paths(name: str, doc: Any) -> set[tuple[Any, ...]]:
    return {tuple(e.absolute_path) for e in schemas.validator(name).iter_errors(doc)}


def compiled_paths(name: str, doc: Any) -> set[tuple[Any, ...]]:
    return {path for path, _ in schemas.compiled_validator(name)(doc, ())}


def corpus() -> dict[str, list[Any]]:
    from tests.test_report_policy import report

    docs: dict[str, list[Any]] = {name: [] for name in SCHEMA_NAMES}
    for golden in sorted((REPO / "tests/inspect/golden").glob("*.json")):
        inspection = json.loads(golden.read_text())
        docs["inspect"].append(inspection)
    docs["report"] += [report(), report(big=True)]
    for profile in sorted((REPO / "profiles").glob("*.yaml")):
        docs["profile"].append(yaml.safe_load(profile.read_text()))
    for legacy in sorted((REPO / "tests/fixtures/legacy-state").glob("*.json")):
        doc = json.loads(legacy.read_text())
        docs["legacy-state"].append(doc)
        try:
            state = migrate_legacy_state(doc, wall=datetime(2026, 12, 1, tzinfo=UTC),
                                         boottime=1000.0)
        except ValueError:
            continue  # a fixture of a corrupt legacy file
        docs["state"].append(state.to_json())
        docs["status"].append(
            build_status(state, node_name="box", observed_at=datetime(2026, 12, 1, tzinfo=UTC))
        )
        for seq, event in enumerate(("migrated-from-legacy", "accepted", "phase"), start=1):
            entry = transition_entry(event, state, at="2026-12-01T00:00:00Z", boot_id="b",
                                     evidence_digest="e" * 64)
            docs["journal"].append({**entry, "seq": seq})
    docs["history"].append(
        build_history(docs["journal"], observed_at=datetime(2026, 12, 1, tzinfo=UTC),
                      journal="/var/lib/magicstick/host-management/journal.jsonl")
    )
    return docs


CORPUS = corpus()


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_every_shipped_schema_compiles(name: str) -> None:
    schemas.compiled_validator(name)


def test_an_unknown_keyword_is_refused_not_ignored() -> None:
    with pytest.raises(UnsupportedSchema):
        compile_schema({"type": "string", "format": "date-time"})
    with pytest.raises(UnsupportedSchema):
        compile_schema({"type": "strnig"})


@pytest.mark.parametrize("name", [n for n in SCHEMA_NAMES if CORPUS[n]])
def test_the_corpus_gets_the_same_verdict(name: str) -> None:
    for doc in CORPUS[name]:
        assert compiled_paths(name, doc) == reference_paths(name, doc)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**40) | st.floats(allow_nan=False,
                                                                   allow_infinity=False)
    | st.sampled_from(["", "x", "0" * 64, "ready", "Succeeded", "2026-12-01T00:00:00Z", "a" * 33]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=6,
)


def paths_of(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += paths_of(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            found += paths_of(value, (*prefix, index))
    return found


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, Any]:
    name = draw(st.sampled_from([n for n in SCHEMA_NAMES if CORPUS[n]]))
    doc = copy.deepcopy(draw(st.sampled_from(CORPUS[name])))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths_of(doc)))
        if not path:
            continue
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(JSON)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=8))] = draw(JSON)
        else:
            parent.append(draw(JSON))
    return name, doc


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_random_mutations_get_the_same_verdict(case: tuple[str, Any]) -> None:
    name, doc = case
    assert compiled_paths(name, doc) == reference_paths(name, doc)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SCHEMA_NAMES), JSON)
def test_random_documents_get_the_same_verdict(name: str, doc: Any) -> None:
    assert compiled_paths(name, doc) == reference_paths(name, doc)


def test_json_equality_keeps_booleans_apart_from_numbers() -> None:
    assert not json_equal(True, 1) and not json_equal(0, False)
    assert json_equal(1, 1.0) and json_equal({"a": [1]}, {"a": [1.0]})
    assert not json_equal([True], [1])
    assert not json_equal(None, "") and json_equal(None, None) and not json_equal("1", 1)


def test_a_str_enum_member_is_its_string() -> None:
    from enum import StrEnum

    class Phase(StrEnum):
        ACCEPTED = "Accepted"

    assert json_equal(Phase.ACCEPTED, "Accepted")
    assert list(compile_schema({"enum": ["Accepted"]})(Phase.ACCEPTED, ())) == []


def test_a_str_subclass_is_the_string_it_spells() -> None:
    # State.to_json carries Phase (a StrEnum); jsonschema compares it as the string it is. The
    # fault soak found every save of a new operation refused (exit 70) before this held.
    from magicstick_host.domain.phase import Phase
    from magicstick_host.domain.state import State
    from tests.harness.factories import operation

    assert json_equal(Phase.ACCEPTED, "Accepted") and json_equal("Accepted", Phase.ACCEPTED)
    assert not json_equal(Phase.ACCEPTED, "Failed")
    doc = State(operation=operation("reboot", Phase.ACCEPTED, boot_id="b")).to_json()
    assert compiled_paths("state", doc) == reference_paths("state", doc) == set()


# -- every keyword, differentially: random small schemas and instances against jsonschema --------

SCALARS = st.none() | st.booleans() | st.integers(-5, 40) | st.sampled_from(
    [0.0, 1.0, 1.5, -2.5, "", "a", "ab", "abc", "cab", "zB", "A1", "x" * 33, "0f" * 2]
)
# scalars as often as containers: a recursive strategy alone draws containers nine times in ten
VALUES = SCALARS | st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), inner, max_size=4),
    max_leaves=8,
)
TYPES = st.sampled_from(["null", "boolean", "integer", "number", "string", "array", "object"])


def keyword_schemas(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keywords: dict[str, st.SearchStrategy[Any]] = {
        "type": TYPES | st.lists(TYPES, min_size=1, max_size=3, unique=True),
        "const": SCALARS,
        "enum": st.lists(SCALARS, min_size=1, max_size=4),
        "pattern": st.sampled_from(["^a", "b$", "^[0-9a-f]+$", "[A-Z]"]),
        "minLength": st.integers(0, 4),
        "maxLength": st.integers(0, 4),
        "minimum": st.integers(-3, 10),
        "maximum": st.integers(-3, 10),
        "minItems": st.integers(0, 3),
        "maxItems": st.integers(0, 3),
        "uniqueItems": st.booleans(),
        "items": inner,
        "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=2),
        "additionalProperties": inner,
        "propertyNames": st.fixed_dictionaries({"pattern": st.sampled_from(["^[ab]$", "^a"])}),
        "required": st.lists(st.sampled_from(["a", "b", "c"]), max_size=2, unique=True),
        "minProperties": st.integers(0, 3),
        "maxProperties": st.integers(0, 3),
        "allOf": st.lists(inner, min_size=1, max_size=2),
        "anyOf": st.lists(inner, min_size=1, max_size=2),
        "oneOf": st.lists(inner, min_size=1, max_size=2),
        "not": inner,
        "if": inner,
        "then": inner,
        "else": inner,
    }
    return st.lists(st.sampled_from(sorted(keywords)), max_size=3, unique=True).flatmap(
        lambda names: st.fixed_dictionaries({n: keywords[n] for n in names})
    )


SCHEMAS = st.recursive(st.booleans() | st.just({}), keyword_schemas, max_leaves=6)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SCHEMAS, VALUES)
def test_each_keyword_matches_jsonschema(schema: Any, value: Any) -> None:
    from jsonschema import Draft202012Validator

    reference = {tuple(e.absolute_path) for e in Draft202012Validator(schema).iter_errors(value)}
    ours = {path for path, _ in compile_schema(schema)(value, ())}
    assert (not ours) == (not reference), (schema, value, ours, reference)
