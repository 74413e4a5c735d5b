"""`dataclass` without code generation: the same classes, built in microseconds.

The standard decorator compiles `__init__`, `__repr__`, `__eq__`, `__hash__`, `__setattr__` and
`__delattr__` from generated source for every class, and reads `inspect.signature` for the
docstring: about a millisecond per class. The tick imports ~130 of them in a fresh process every
15 seconds, which was close to half of its CPU (issue "The idle tick at the floor"). This
decorator builds the same methods as closures over the field list instead: class creation costs
next to nothing, an instance costs a few microseconds more, and nothing here creates many.

It is the subset the product uses, with the standard semantics: `frozen`, fields with defaults
and `field(default=..., default_factory=..., repr=..., compare=...)`, inherited fields,
`__post_init__`, `__match_args__`, and methods a class defines itself are kept. Classes carry
real `dataclasses.Field` objects in `__dataclass_fields__`, so `dataclasses.fields`, `replace`,
`asdict` and `is_dataclass` work on them unchanged (tests/test_lite_dataclasses.py holds them to
the standard decorator's behaviour). `typing.dataclass_transform` tells the type checker that
this is a dataclass decorator.
"""

from __future__ import annotations

import dataclasses
import reprlib
import typing
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError, field, replace
from typing import Any, TypeVar, dataclass_transform, overload

__all__ = ["FrozenInstanceError", "dataclass", "field", "replace"]

_T = TypeVar("_T")
# the marker `dataclasses.fields()` filters on; present under this name since Python 3.7
_REGULAR_FIELD = dataclasses._FIELD  # type: ignore[attr-defined]


@overload
@dataclass_transform(field_specifiers=(field, Field))
def dataclass(cls: type[_T], /) -> type[_T]: ...


@overload
def dataclass(*, frozen: bool = False) -> Callable[[type[_T]], type[_T]]: ...


def dataclass(cls: type[_T] | None = None, /, *,
              frozen: bool = False) -> type[_T] | Callable[[type[_T]], type[_T]]:
    def wrap(c: type[_T]) -> type[_T]:
        return _process(c, frozen)

    return wrap if cls is None else wrap(cls)


def _is_classvar(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    return annotation is typing.ClassVar or typing.get_origin(annotation) is typing.ClassVar


def _collect_fields(cls: type) -> dict[str, Field[Any]]:
    fields: dict[str, Field[Any]] = {}
    for base in reversed(cls.__mro__[1:]):
        fields.update(base.__dict__.get("__dataclass_fields__", {}))
    # the class's own annotations, as strings; inspect.get_annotations would import inspect
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063
        if _is_classvar(annotation):
            continue
        default = cls.__dict__.get(name, MISSING)
        if isinstance(default, Field):
            spec = default
            if spec.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
        else:
            spec = field() if default is MISSING else field(default=default)
        if spec.default is not MISSING and type(spec.default).__hash__ is None:
            raise ValueError(f"mutable default {type(spec.default)} for field {name} "
                             "is not allowed: use default_factory")
        spec.name = name
        spec.type = annotation
        spec._field_type = _REGULAR_FIELD  # type: ignore[attr-defined]
        fields[name] = spec
    seen_default = False
    for spec in fields.values():
        has_default = spec.default is not MISSING or spec.default_factory is not MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {spec.name!r} follows default argument")
        seen_default = seen_default or has_default
    return fields


class _InitSignature:
    """`inspect.signature(cls)`, built when asked: the generic `__init__(*args, **kwargs)`
    would otherwise hide the fields from tools that read signatures (hypothesis' `builds`)."""

    def __init__(self, fields: dict[str, Field[Any]]) -> None:
        self.fields = fields

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        import inspect

        def default_of(spec: Field[Any]) -> Any:
            if spec.default is not MISSING:
                return spec.default
            return inspect.Parameter.empty if spec.default_factory is MISSING else _FACTORY

        return inspect.Signature([
            inspect.Parameter(spec.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                              default=default_of(spec), annotation=spec.type)
            for spec in self.fields.values()
        ], return_annotation=None)


class _Factory:
    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _set_unless_defined(cls: type, name: str, value: Any) -> None:
    if name not in cls.__dict__:
        setattr(cls, name, value)


def _process(cls: type[_T], frozen: bool) -> type[_T]:
    fields = _collect_fields(cls)
    cls.__dataclass_fields__ = fields  # type: ignore[attr-defined]
    names = tuple(fields)
    known = frozenset(names)
    specs = tuple((f.name, f.default, f.default_factory) for f in fields.values())
    compared = tuple(f.name for f in fields.values() if f.compare)
    shown = tuple(f.name for f in fields.values() if f.repr)
    post_init = getattr(cls, "__post_init__", None) is not None
    qualname = cls.__qualname__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(specs):
            raise TypeError(f"{qualname}.__init__() takes {len(specs) + 1} positional "
                            f"arguments but {len(args) + 1} were given")
        values = dict(zip(names, args, strict=False))
        if kwargs:
            unknown = [k for k in kwargs if k not in known]
            if unknown:
                raise TypeError(f"{qualname}.__init__() got an unexpected keyword argument "
                                f"{unknown[0]!r}")
            twice = [k for k in kwargs if k in values]
            if twice:
                raise TypeError(f"{qualname}.__init__() got multiple values for argument "
                                f"{twice[0]!r}")
        for name, default, factory in specs[len(args):]:
            if name in kwargs:
                values[name] = kwargs[name]
            elif default is not MISSING:
                values[name] = default
            elif factory is not MISSING:
                values[name] = factory()
            else:
                raise TypeError(f"{qualname}.__init__() missing 1 required positional "
                                f"argument: {name!r}")
        self.__dict__.update(values)
        if post_init:
            self.__post_init__()

    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{name}={self.__dict__[name]!r}" for name in shown)
        return f"{type(self).__qualname__}({inner})"

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        mine, theirs = self.__dict__, other.__dict__
        return tuple(mine[n] for n in compared) == tuple(theirs[n] for n in compared)

    for method in (__init__, __repr__, __eq__):
        method.__qualname__ = f"{qualname}.{method.__name__}"
    _set_unless_defined(cls, "__init__", __init__)
    _set_unless_defined(cls, "__repr__", __repr__)
    class_hash = cls.__dict__.get("__hash__", MISSING)
    defines_hash = not (class_hash is MISSING or (class_hash is None and "__eq__" in cls.__dict__))
    _set_unless_defined(cls, "__eq__", __eq__)
    if not defines_hash:
        if frozen:
            def __hash__(self: Any) -> int:
                return hash(tuple(self.__dict__[n] for n in compared))

            __hash__.__qualname__ = f"{qualname}.__hash__"
            cls.__hash__ = __hash__  # type: ignore[method-assign]
        else:
            cls.__hash__ = None  # type: ignore[assignment]
    if frozen:
        def __setattr__(self: Any, name: str, value: Any) -> None:
            if type(self) is cls or name in known:
                raise FrozenInstanceError(f"cannot assign to field {name!r}")
            super(cls, self).__setattr__(name, value)

        def __delattr__(self: Any, name: str) -> None:
            if type(self) is cls or name in known:
                raise FrozenInstanceError(f"cannot delete field {name!r}")
            super(cls, self).__delattr__(name)

        for method in (__setattr__, __delattr__):
            if method.__name__ in cls.__dict__:
                raise TypeError(f"cannot overwrite attribute {method.__name__} in class "
                                f"{cls.__name__}")
            method.__qualname__ = f"{qualname}.{method.__name__}"
            setattr(cls, method.__name__, method)
    _set_unless_defined(cls, "__match_args__", names)
    _set_unless_defined(cls, "__signature__", _InitSignature(fields))
    return cls
