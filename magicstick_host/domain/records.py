"""Typed records as JSON: an operation's data in state.json, checked against its declared types.

A record is a frozen dataclass whose fields are JSON-shaped: `str`, `int`, `float`, `bool`,
`None`, `Literal[...]`, unions of these (`int | None`), `list[X]`, `dict[str, X]`, another
record, or `Any` (any JSON value). The field `new_carveout_mi` is the key `newCarveoutMi`.

- `record_to_json(record)`: the JSON object (every field, `None` as null).
- `record_from_json(cls, doc)`: the record, or ValueError naming the key and what is wrong: an
  unknown key, a missing key without a default, a value of another type. A key whose field has
  a default may be absent (state files written before the field existed).
- `record_schema(cls)`: the same rules as a JSON Schema, which the state store checks on save.

A boolean is never an integer here (JSON distinguishes them, Python does not). Pure.
"""

from __future__ import annotations

import types
import typing
from functools import cache
from typing import TYPE_CHECKING, get_type_hints

from magicstick_host import lite_dataclasses as dataclasses
from magicstick_host.lite_dataclasses import dataclass

if TYPE_CHECKING:
    from typing import Any, TypeVar

    R = TypeVar("R")
    Json = dict[str, Any]


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@dataclass(frozen=True)
class NoData:
    """The data of an operation that records nothing beyond its steps (reboot, poweroff)."""


@cache
def _fields(cls: type) -> tuple[tuple[str, str, Any, bool], ...]:
    """(attribute, JSON key, type, has a default) of each field of a record class."""
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"{cls!r} is not a record (a dataclass)")
    hints = get_type_hints(cls)
    return tuple(
        (
            f.name,
            camel(f.name),
            hints[f.name],
            f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING,
        )
        for f in dataclasses.fields(cls)
    )


def _is_record(kind: Any) -> bool:
    return isinstance(kind, type) and dataclasses.is_dataclass(kind)


def _is_union(kind: Any) -> bool:
    return typing.get_origin(kind) in (typing.Union, types.UnionType)


def record_to_json(record: Any) -> Json:
    doc = _to_json(record)
    assert isinstance(doc, dict)
    return doc


def _to_json(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind: type = type(value)
        return {key: _to_json(getattr(value, name)) for name, key, _, _ in _fields(kind)}
    if isinstance(value, list | tuple):
        return [_to_json(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _to_json(v) for k, v in value.items()}
    return value


def record_from_json(cls: type[R], doc: Any, path: str = "data") -> R:
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: not an object")
    record_class: type = cls  # a class: hashable, as the cache of _fields needs
    fields = _fields(record_class)
    known = {key for _, key, _, _ in fields}
    extra = sorted(str(k) for k in doc if k not in known)
    if extra:
        raise ValueError(f"{path}: unknown key {extra[0]!r}")
    values: dict[str, Any] = {}
    for name, key, kind, has_default in fields:
        if key not in doc:
            if has_default:
                continue
            raise ValueError(f"{path}.{key}: missing")
        values[name] = _from_json(kind, doc[key], f"{path}.{key}")
    return cls(**values)


def _from_json(kind: Any, value: Any, path: str) -> Any:
    from typing import get_args

    if kind is typing.Any:
        return value
    if _is_record(kind):
        return record_from_json(kind, value, path)
    if _is_union(kind):
        for option in get_args(kind):
            try:
                return _from_json(option, value, path)
            except ValueError:
                continue
        raise ValueError(f"{path}: {_describe(value)} is not {_name(kind)}")
    origin = typing.get_origin(kind)
    if origin is typing.Literal:
        if any(value == v and type(value) is type(v) for v in get_args(kind)):
            return value
        raise ValueError(f"{path}: {value!r} is not one of {list(get_args(kind))}")
    if origin is list:
        if not isinstance(value, list):
            raise ValueError(f"{path}: {_describe(value)} is not a list")
        (item,) = get_args(kind)
        return [_from_json(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ValueError(f"{path}: {_describe(value)} is not an object")
        _, item = get_args(kind)
        return {str(k): _from_json(item, v, f"{path}.{k}") for k, v in value.items()}
    if kind is type(None):
        if value is None:
            return None
    elif kind is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif kind in (str, int, bool):
        if type(value) is kind:
            return value
    else:
        raise TypeError(f"{path}: the record declares an unsupported type {kind!r}")
    raise ValueError(f"{path}: {_describe(value)} is not {_name(kind)}")


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _name(kind: Any) -> str:
    if kind is type(None):
        return "null"
    if _is_union(kind):
        return " or ".join(_name(k) for k in typing.get_args(kind))
    return getattr(kind, "__name__", str(kind))


@cache
def record_schema(cls: type) -> Json:
    """The JSON Schema of a record class (draft 2020-12, self-contained)."""
    properties = {key: _schema(kind) for _, key, kind, _ in _fields(cls)}
    required = [key for _, key, _, has_default in _fields(cls) if not has_default]
    return {
        "type": "object",
        "additionalProperties": False,
        "required": required,
        "properties": properties,
    }


def _schema(kind: Any) -> Json:
    from typing import get_args

    if kind is typing.Any:
        return {}
    if _is_record(kind):
        return record_schema(kind)
    if _is_union(kind):
        return {"anyOf": [_schema(k) for k in get_args(kind)]}
    origin = typing.get_origin(kind)
    if origin is typing.Literal:
        return {"enum": list(get_args(kind))}
    if origin is list:
        return {"type": "array", "items": _schema(get_args(kind)[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema(get_args(kind)[1])}
    simple = {type(None): "null", str: "string", int: "integer", float: "number", bool: "boolean"}
    if kind in simple:
        return {"type": simple[kind]}
    raise TypeError(f"the record declares an unsupported type {kind!r}")

