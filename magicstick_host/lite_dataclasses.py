"""`dataclass` without code generation: the same classes, built in microseconds.

The standard decorator compiles `__init__`, `__repr__`, `__eq__`, `__hash__`, `__setattr__` and
`__delattr__` from generated source for every class, and reads `inspect.signature` for the
docstring: about a millisecond per class. The tick imports ~130 of them in a fresh process every
15 seconds, which was close to half of its CPU (issue "The idle tick at the floor"). This
decorator builds the same methods as closures over the field list instead: class creation costs
next to nothing, an instance costs a few microseconds more, and nothing here creates many.

It is the subset the product uses, with the standard semantics: `frozen`, fields with defaults
and `field(default=..., default_factory=..., repr=..., compare=...)`, inherited fields,
`__post_init__`, `__match_args__`, and methods a class defines itself are kept. `fields`,
`replace`, `asdict` and `is_dataclass` here are the standard functions for these classes. The
standard module is not imported (it imports inspect, ast, dis and tokenize: another ~5 ms), yet
`dataclasses.fields`, `replace`, `asdict` and `is_dataclass` work on these classes too: their
`__dataclass_fields__` is built, with the standard module, the first time something asks
(tests/test_lite_dataclasses.py and tests/differential/ hold it to the standard decorator; what
it does not do as the standard does, it refuses with a TypeError when the class is defined).
`typing.dataclass_transform` tells the type checker that this is a dataclass decorator.
"""

from __future__ import annotations

import reprlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from magicstick_host.lite_annotations import is_classvar, is_initvar, own_annotations

if TYPE_CHECKING:
    from typing import Any, TypeVar, dataclass_transform, overload

    _T = TypeVar("_T")

__all__ = ["MISSING", "Field", "FrozenInstanceError", "asdict", "dataclass", "field", "fields",
           "is_dataclass", "replace"]

class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a frozen instance (as dataclasses.FrozenInstanceError)."""


class Field:
    __slots__ = ("compare", "default", "default_factory", "name", "repr", "type")

    def __init__(self, default: Any, default_factory: Any, repr: bool, compare: bool) -> None:
        self.name = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r})"


def field(*, default: Any = MISSING, default_factory: Any = MISSING, repr: bool = True,
          compare: bool = True) -> Any:
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(default, default_factory, repr, compare)


def _fields_of(cls: type) -> dict[str, Field]:
    found: dict[str, Field] | None = getattr(cls, "__lite_fields__", None)
    if found is not None:
        return found
    if _is_standard(cls):  # the standard decorator's class (an operation's or a test's record)
        return _standard_fields(cls)
    raise TypeError(f"{cls!r} is not a dataclass")


def _is_standard(cls: type) -> bool:
    # a standard dataclass exists only once its module was imported: no import here
    standard = sys.modules.get("dataclasses")
    return standard is not None and bool(standard.is_dataclass(cls))


_STANDARD: dict[type, dict[str, Field]] = {}


def _standard_fields(cls: type) -> dict[str, Field]:
    held = _STANDARD.get(cls)
    if held is None:
        import dataclasses

        def own(v: Any) -> Any:
            return MISSING if v is dataclasses.MISSING else v

        held = {}
        for f in dataclasses.fields(cls):
            spec = Field(own(f.default), own(f.default_factory), f.repr, f.compare)
            spec.name, spec.type = f.name, f.type
            held[f.name] = spec
        _STANDARD[cls] = held
    return held


def is_dataclass(obj: object) -> bool:
    """Whether `obj` is a dataclass (or an instance of one), of this module or the standard."""
    cls = obj if isinstance(obj, type) else type(obj)
    return hasattr(cls, "__lite_fields__") or _is_standard(cls)


def fields(class_or_instance: object) -> tuple[Field, ...]:
    cls = class_or_instance if isinstance(class_or_instance, type) else type(class_or_instance)
    return tuple(_fields_of(cls).values())


def replace(obj: _T, /, **changes: Any) -> _T:
    for name in _fields_of(type(obj)):
        if name not in changes:
            changes[name] = getattr(obj, name)
    return type(obj)(**changes)


def asdict(obj: object) -> Any:
    """As dataclasses.asdict: fields to a dict, recursively, through lists, tuples and dicts."""
    if is_dataclass(obj) and not isinstance(obj, type):
        return {name: asdict(getattr(obj, name)) for name in _fields_of(type(obj))}
    if isinstance(obj, list | tuple):
        return type(obj)(asdict(item) for item in obj)
    if isinstance(obj, dict):
        return type(obj)((asdict(k), asdict(v)) for k, v in obj.items())
    import copy

    return copy.deepcopy(obj)


class _StandardFields:
    """`__dataclass_fields__`, built with the standard module when first asked (by
    dataclasses.fields/replace/asdict/is_dataclass, e.g. in tests), then kept on the class."""

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        import dataclasses

        cls = owner if owner is not None else type(obj)
        built: dict[str, Any] = {}
        for name, spec in _fields_of(cls).items():
            standard: Any = dataclasses.field(
                default=dataclasses.MISSING if spec.default is MISSING else spec.default,
                default_factory=(dataclasses.MISSING if spec.default_factory is MISSING
                                 else spec.default_factory),
                repr=spec.repr, compare=spec.compare)
            standard.name, standard.type = name, spec.type
            # the marker dataclasses.fields() filters on (this name since Python 3.7)
            standard._field_type = dataclasses._FIELD  # type: ignore[attr-defined]
            built[name] = standard
        if "__lite_fields__" in cls.__dict__:
            cls.__dataclass_fields__ = built  # type: ignore[attr-defined]
        return built


# the checker's view, which the interpreter does not need
if TYPE_CHECKING:
    @overload
    @dataclass_transform(field_specifiers=(field,))
    def dataclass(cls: type[_T], /) -> type[_T]: ...

    @overload
    def dataclass(*, frozen: bool = False) -> Callable[[type[_T]], type[_T]]: ...


def dataclass(cls: type[_T] | None = None, /, *,
              frozen: bool = False) -> type[_T] | Callable[[type[_T]], type[_T]]:
    def wrap(c: type[_T]) -> type[_T]:
        return _process(c, frozen)

    return wrap if cls is None else wrap(cls)


def _from_standard(value: Any) -> Any:
    """A `dataclasses.field(...)` in a class body, as this module's Field."""
    if type(value).__module__ != "dataclasses" or type(value).__name__ != "Field":
        return value
    import dataclasses

    def own(v: Any) -> Any:
        return MISSING if v is dataclasses.MISSING else v

    return Field(own(value.default), own(value.default_factory), value.repr, value.compare)


def _is_standard_field(value: Any) -> bool:
    return type(value).__module__ == "dataclasses" and type(value).__name__ == "Field"


def _collect_fields(cls: type, frozen: bool) -> dict[str, Field | None]:
    """The class's fields in the standard's order, a ClassVar's name holding its place (None),
    as the standard's `__dataclass_fields__` holds a ClassVar's pseudo-field."""
    fields: dict[str, Field | None] = {}
    for base in reversed(cls.__mro__[1:]):
        if "__dataclass_params__" in base.__dict__:
            # the standard decorator's class: its fields, InitVars and options are its own
            raise TypeError(f"{cls.__qualname__}: lite_dataclasses cannot build on the "
                            f"standard dataclass {base.__qualname__}; use dataclasses for both")
        if "__lite_fields__" in base.__dict__:
            if base.__dict__["__lite_frozen__"] != frozen:
                raise TypeError("cannot inherit frozen dataclass from a non-frozen one"
                                if frozen else
                                "cannot inherit non-frozen dataclass from a frozen one")
            fields.update(base.__dict__["__lite_entries__"])
    own = own_annotations(cls)
    for name, value in cls.__dict__.items():
        if (isinstance(value, Field) or _is_standard_field(value)) and name not in own:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    for name, annotation in own.items():
        if is_classvar(annotation, cls):
            value = _from_standard(getattr(cls, name, MISSING))
            if isinstance(value, Field):  # as the standard treats a field() on a ClassVar
                if value.default_factory is not MISSING:
                    raise TypeError(f"field {name} cannot have a default factory")
                if value.default is MISSING:
                    delattr(cls, name)
                else:
                    setattr(cls, name, value.default)
            fields[name] = None  # an inherited field of that name is no longer one
            continue
        if is_initvar(annotation, cls):
            raise TypeError(f"{cls.__qualname__}.{name}: InitVar is not supported here; "
                            "use dataclasses")
        # as the standard: the class attribute, inherited too (a re-annotated field keeps
        # the default its base gave it)
        default = _from_standard(getattr(cls, name, MISSING))
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
        fields[name] = spec
    seen_default = False
    for entry in fields.values():
        if entry is None:
            continue
        spec = entry
        has_default = spec.default is not MISSING or spec.default_factory is not MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {spec.name!r} follows default argument")
        seen_default = seen_default or has_default
    return fields


class _InitSignature:
    """`inspect.signature(cls)`, built when asked: the generic `__init__(*args, **kwargs)`
    would otherwise hide the fields from tools that read signatures (hypothesis' `builds`)."""

    def __init__(self, fields: dict[str, Field]) -> None:
        self.fields = fields

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        import inspect

        def default_of(spec: Field) -> Any:
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
    entries = _collect_fields(cls, frozen)
    fields = {name: spec for name, spec in entries.items() if spec is not None}
    cls.__lite_entries__ = entries  # type: ignore[attr-defined]
    cls.__lite_fields__ = fields  # type: ignore[attr-defined]
    cls.__lite_frozen__ = frozen  # type: ignore[attr-defined]
    cls.__dataclass_fields__ = _StandardFields()  # type: ignore[attr-defined]
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

    if sys.version_info >= (3, 13):
        # 3.13's: the instance itself, then `self.a == other.a and self.b == other.b` (a field
        # equal to itself but not ==, a NaN, no longer makes two instances equal)
        def __eq__(self: Any, other: Any) -> Any:
            if self is other:
                return True
            if other.__class__ is not self.__class__:
                return NotImplemented
            mine, theirs = self.__dict__, other.__dict__
            result: Any = True
            for n in compared:
                result = mine[n] == theirs[n]
                if not result:
                    return result
            return result

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
