"""A small JSON Schema (draft 2020-12) validator for the schemas this package ships.

Every tick validates what comes from outside (the state file, the report it is about to publish)
and the jsonschema library costs about 0.1 s to import, which is most of an idle tick. The
shipped schemas use a small set of keywords, so they are compiled here into plain closures. A
keyword outside that set is refused when a schema is compiled, and a test holds this validator to
jsonschema's verdict on every shipped schema (tests/schemas/test_compiled.py): the guarantees are
the same, only cheaper.

Semantics follow draft 2020-12 as jsonschema implements it: `integer` accepts 1.0, booleans are
never numbers, `const`/`enum`/`uniqueItems` compare as JSON (true != 1), `pattern` is a search.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

    # (path, message) pairs; path is a tuple of keys and indexes from the root of the instance
    Problem = tuple[tuple[Any, ...], str]
    Check = Callable[[Any, tuple[Any, ...]], Iterator[Problem]]

ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "examples", "default", "$defs",
     "deprecated", "readOnly", "writeOnly"}
)
SUPPORTED = frozenset(
    {"type", "const", "enum", "pattern", "minLength", "maxLength", "minimum", "maximum",
     "minItems", "maxItems", "uniqueItems", "items", "properties", "additionalProperties",
     "propertyNames", "required", "minProperties", "maxProperties", "allOf", "anyOf", "oneOf",
     "not", "if", "then", "else"}
)


class UnsupportedSchema(ValueError):
    """The schema uses a keyword this validator does not implement: use jsonschema instead."""


def _is_type(value: Any, name: str) -> bool:
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if isinstance(value, bool):
        return False
    if name == "number":
        return isinstance(value, int | float)
    if name == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    raise UnsupportedSchema(f"unknown type {name!r}")


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: booleans are not numbers, 1 == 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, str) and isinstance(b, str):  # str subclasses too (a StrEnum phase)
        return str.__eq__(a, b)
    return a is None and b is None


def _show(value: Any) -> str:
    return repr(value)


def compile_schema(schema: Any) -> Check:
    """The check for one (already $ref-inlined) schema."""
    if schema is True:
        return lambda value, path: iter(())
    if schema is False:
        return lambda value, path: iter([(path, f"False schema does not allow {_show(value)}")])
    if not isinstance(schema, dict):
        raise UnsupportedSchema(f"a schema must be an object or a boolean, not {schema!r}")
    unknown = set(schema) - SUPPORTED - ANNOTATIONS
    if unknown:
        raise UnsupportedSchema(f"unsupported keywords {sorted(unknown)}")
    checks: list[Check] = []
    add = checks.append
    if "type" in schema:
        add(_type_check(schema["type"]))
    if "const" in schema:
        expected = schema["const"]
        add(lambda v, p: iter([] if json_equal(v, expected) else
                              [(p, f"{_show(expected)} was expected")]))
    if "enum" in schema:
        options = list(schema["enum"])
        add(lambda v, p: iter([] if any(json_equal(v, o) for o in options) else
                              [(p, f"{_show(v)} is not one of {_show(options)}")]))
    _string_checks(schema, add)
    _number_checks(schema, add)
    _array_checks(schema, add)
    _object_checks(schema, add)
    _combinators(schema, add)

    def check(value: Any, path: tuple[Any, ...]) -> Iterator[Problem]:
        for one in checks:
            yield from one(value, path)

    return check


def _type_check(declared: Any) -> Check:
    names = [declared] if isinstance(declared, str) else list(declared)
    for name in names:
        _is_type(None, name)  # refuses an unknown type name now, not at validation time
    shown = _show(names[0]) if len(names) == 1 else _show(names)

    def check(value: Any, path: tuple[Any, ...]) -> Iterator[Problem]:
        if not any(_is_type(value, n) for n in names):
            yield path, f"{_show(value)} is not of type {shown}"

    return check


def _string_checks(schema: dict[str, Any], add: Callable[[Check], None]) -> None:
    if "pattern" in schema:
        source = schema["pattern"]
        regex = re.compile(source)
        add(lambda v, p: iter([(p, f"{_show(v)} does not match {_show(source)}")]
                              if isinstance(v, str) and not regex.search(v) else []))
    if "minLength" in schema:
        low = schema["minLength"]
        add(lambda v, p: iter([(p, f"{_show(v)} is too short")]
                              if isinstance(v, str) and len(v) < low else []))
    if "maxLength" in schema:
        high = schema["maxLength"]
        add(lambda v, p: iter([(p, f"{_show(v)} is too long")]
                              if isinstance(v, str) and len(v) > high else []))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number_checks(schema: dict[str, Any], add: Callable[[Check], None]) -> None:
    if "minimum" in schema:
        low = schema["minimum"]
        add(lambda v, p: iter([(p, f"{_show(v)} is less than the minimum of {low}")]
                              if _is_number(v) and v < low else []))
    if "maximum" in schema:
        high = schema["maximum"]
        add(lambda v, p: iter([(p, f"{_show(v)} is greater than the maximum of {high}")]
                              if _is_number(v) and v > high else []))


def _array_checks(schema: dict[str, Any], add: Callable[[Check], None]) -> None:
    if "minItems" in schema:
        low = schema["minItems"]
        add(lambda v, p: iter([(p, f"{_show(v)} should be non-empty" if low == 1 else
                                f"{_show(v)} is too short")]
                              if isinstance(v, list) and len(v) < low else []))
    if "maxItems" in schema:
        high = schema["maxItems"]
        add(lambda v, p: iter([(p, f"{_show(v)} is too long")]
                              if isinstance(v, list) and len(v) > high else []))
    if schema.get("uniqueItems") is True:
        def unique(v: Any, p: tuple[Any, ...]) -> Iterator[Problem]:
            if isinstance(v, list) and any(
                json_equal(v[i], v[j]) for i in range(len(v)) for j in range(i + 1, len(v))
            ):
                yield p, f"{_show(v)} has non-unique elements"

        add(unique)
    if "items" in schema:
        item = compile_schema(schema["items"])

        def items(v: Any, p: tuple[Any, ...]) -> Iterator[Problem]:
            if isinstance(v, list):
                for index, element in enumerate(v):
                    yield from item(element, (*p, index))

        add(items)


def _object_checks(schema: dict[str, Any], add: Callable[[Check], None]) -> None:
    if "required" in schema:
        names = list(schema["required"])
        add(lambda v, p: iter([(p, f"{_show(n)} is a required property") for n in names
                               if n not in v] if isinstance(v, dict) else []))
    if "minProperties" in schema:
        low = schema["minProperties"]
        add(lambda v, p: iter([(p, f"{_show(v)} does not have enough properties")]
                              if isinstance(v, dict) and len(v) < low else []))
    if "maxProperties" in schema:
        high = schema["maxProperties"]
        add(lambda v, p: iter([(p, f"{_show(v)} has too many properties")]
                              if isinstance(v, dict) and len(v) > high else []))
    properties = {k: compile_schema(s) for k, s in (schema.get("properties") or {}).items()}
    extra = schema.get("additionalProperties", True)
    extra_check = None if extra is True or extra is False else compile_schema(extra)
    if properties or extra is not True:
        def members(v: Any, p: tuple[Any, ...]) -> Iterator[Problem]:
            if not isinstance(v, dict):
                return
            unexpected = []
            for key, member in v.items():
                known = properties.get(key)
                if known is not None:
                    yield from known(member, (*p, key))
                elif extra is False:
                    unexpected.append(key)
                elif extra_check is not None:
                    yield from extra_check(member, (*p, key))
            if unexpected:
                listed = ", ".join(_show(k) for k in unexpected)
                verb = "were" if len(unexpected) > 1 else "was"
                yield p, f"Additional properties are not allowed ({listed} {verb} unexpected)"

        add(members)
    if "propertyNames" in schema:
        name_check = compile_schema(schema["propertyNames"])
        add(lambda v, p: (problem for key in (v if isinstance(v, dict) else ())
                          for problem in name_check(key, p)))


def _valid(check: Check, value: Any) -> bool:
    return next(check(value, ()), None) is None


def _combinators(schema: dict[str, Any], add: Callable[[Check], None]) -> None:
    if "allOf" in schema:
        parts = [compile_schema(s) for s in schema["allOf"]]
        add(lambda v, p: (problem for part in parts for problem in part(v, p)))
    if "anyOf" in schema:
        options = [compile_schema(s) for s in schema["anyOf"]]
        add(lambda v, p: iter([] if any(_valid(o, v) for o in options) else
                              [(p, f"{_show(v)} is not valid under any of the given schemas")]))
    if "oneOf" in schema:
        choices = [compile_schema(s) for s in schema["oneOf"]]

        def one_of(v: Any, p: tuple[Any, ...]) -> Iterator[Problem]:
            matched = sum(1 for c in choices if _valid(c, v))
            if matched == 0:
                yield p, f"{_show(v)} is not valid under any of the given schemas"
            elif matched > 1:
                yield p, f"{_show(v)} is valid under each of several of the given schemas"

        add(one_of)
    if "not" in schema:
        negated = compile_schema(schema["not"])
        add(lambda v, p: iter([(p, f"{_show(v)} should not be valid under the schema")]
                              if _valid(negated, v) else []))
    if "if" in schema:
        condition = compile_schema(schema["if"])
        then = compile_schema(schema["then"]) if "then" in schema else None
        otherwise = compile_schema(schema["else"]) if "else" in schema else None

        def conditional(v: Any, p: tuple[Any, ...]) -> Iterator[Problem]:
            branch = then if _valid(condition, v) else otherwise
            if branch is not None:
                yield from branch(v, p)

        add(conditional)
