"""The host model to and from JSON-ready dicts (`.magicstick-sim/host.json`).

Generic over the model's dataclasses, so a new field needs no codec change; a missing field takes
its default, which keeps older host.json files loadable.
"""

from __future__ import annotations

import types
from functools import cache
from typing import TYPE_CHECKING, get_type_hints

from magicstick_host import lite_dataclasses as dataclasses
from magicstick_host.errors import BadInputError
from magicstick_host.sim.model import Host

if TYPE_CHECKING:
    from typing import Any


def host_to_dict(host: Host) -> dict[str, Any]:
    data: dict[str, Any] = dataclasses.asdict(host)
    return data


def host_from_dict(data: object) -> Host:
    host: Host = _build(Host, data, "host")
    return host


def _build(tp: Any, value: object, where: str) -> Any:
    # the model's annotations are builtins, `X | None`, list[X], dict[str, X] and its classes
    origin = tp.__origin__ if isinstance(tp, types.GenericAlias) else None
    if isinstance(tp, types.UnionType):
        args = tp.__args__
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _build(inner, value, where)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _build_dataclass(tp, value, where)
    if origin is list:
        (item,) = tp.__args__
        if not isinstance(value, list):
            raise BadInputError(f"{where}: expected a list")
        return [_build(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        _, item = tp.__args__
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise BadInputError(f"{where}: expected an object")
        return {k: _build(item, v, f"{where}.{k}") for k, v in value.items()}
    if tp is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if tp in (str, int, bool) and type(value) is tp:
        return value
    raise BadInputError(f"{where}: expected {getattr(tp, '__name__', tp)}, got {value!r}")


def _build_dataclass(cls: type[Any], value: object, where: str) -> Any:
    if not isinstance(value, dict):
        raise BadInputError(f"{where}: expected an object")
    kwargs: dict[str, Any] = {}
    record_class: type = cls  # a class: hashable, as the cache of _fields needs
    for name, hint, required in _fields(record_class):
        if name in value:
            kwargs[name] = _build(hint, value[name], f"{where}.{name}")
        elif required:
            raise BadInputError(f"{where}: missing {name}")
    return cls(**kwargs)


@cache  # the simulated runner loads the host for every command it answers
def _fields(cls: type) -> tuple[tuple[str, Any, bool], ...]:
    hints = get_type_hints(cls)
    return tuple(
        (f.name, hints[f.name],
         f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
        for f in dataclasses.fields(cls)
    )
