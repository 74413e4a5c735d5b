"""The lite decorator behaves as the standard one for everything the product relies on."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, ClassVar

import pytest

from magicstick_host import lite_dataclasses as lite


def pair(frozen: bool) -> tuple[type, type]:
    """The same class body under both decorators."""

    def build(decorate: Any) -> type:
        @decorate(frozen=frozen)
        class Sample:
            name: str
            size: int = 0
            tags: tuple[str, ...] = dataclasses.field(default_factory=tuple)
            secret: str = dataclasses.field(default="", repr=False)
            KIND: ClassVar[str] = "sample"

            def label(self) -> str:
                return f"{self.name}:{self.size}"

        return Sample

    return build(dataclasses.dataclass), build(lite.dataclass)


@pytest.mark.parametrize("frozen", [True, False])
def test_construction_equality_and_repr_match_the_standard_decorator(frozen: bool) -> None:
    std, mine = pair(frozen)
    cases: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        (("a",), {}), (("a", 2), {}), ((), {"name": "b", "tags": ("x",)}),
        (("c",), {"secret": "s", "size": 3}),
    ]
    for args, kwargs in cases:
        s, m = std(*args, **kwargs), mine(*args, **kwargs)
        assert repr(m) == repr(s)
        assert vars(m) == vars(s)
        assert m == mine(*args, **kwargs)
        assert m != mine("other")
        assert m.label() == s.label()
        if frozen:
            assert hash(m) == hash(s)
        else:
            assert mine.__hash__ is None
    assert mine("a").tags == ()
    assert mine.__match_args__ == std.__match_args__
    assert mine.KIND == "sample" and "KIND" not in {f.name for f in dataclasses.fields(mine)}


@pytest.mark.parametrize("frozen", [True, False])
def test_bad_calls_raise_type_error_as_the_standard_decorator_does(frozen: bool) -> None:
    std, mine = pair(frozen)
    for args, kwargs in [((), {}), (("a", 1, (), "", "extra"), {}), (("a",), {"name": "b"}),
                         (("a",), {"colour": "red"})]:
        with pytest.raises(TypeError):
            std(*args, **kwargs)
        with pytest.raises(TypeError):
            mine(*args, **kwargs)


def test_frozen_instances_refuse_assignment_and_deletion() -> None:
    _, mine = pair(True)
    item = mine("a")
    with pytest.raises(lite.FrozenInstanceError):
        item.name = "b"
    with pytest.raises(lite.FrozenInstanceError):
        del item.size
    with pytest.raises(AttributeError):  # FrozenInstanceError is one, as code catching it expects
        item.other = 1


def test_dataclasses_module_functions_work_on_lite_classes() -> None:
    std, mine = pair(True)
    item = mine("a", 2, ("t",), "s")
    assert dataclasses.is_dataclass(mine) and dataclasses.is_dataclass(item)
    assert [f.name for f in dataclasses.fields(mine)] == [f.name for f in dataclasses.fields(std)]
    assert dataclasses.asdict(item) == dataclasses.asdict(std("a", 2, ("t",), "s"))
    changed = lite.replace(item, size=5)
    assert type(changed) is mine and changed.size == 5 and changed.name == "a"
    assert copy.deepcopy(item) == item


def test_inherited_fields_post_init_and_own_methods() -> None:
    @lite.dataclass(frozen=True)
    class Base:
        a: int
        b: int = 1

    @lite.dataclass(frozen=True)
    class Child(Base):
        c: int = 2

        def __post_init__(self) -> None:
            if self.c < 0:
                raise ValueError("c")

        def __repr__(self) -> str:
            return "child"

    assert [f.name for f in dataclasses.fields(Child)] == ["a", "b", "c"]
    assert vars(Child(0, c=3)) == {"a": 0, "b": 1, "c": 3}
    assert repr(Child(0)) == "child"
    assert Child(0) != Base(0)  # another class is never equal, as with the standard decorator
    with pytest.raises(ValueError):
        Child(0, c=-1)


def test_definition_errors_match_the_standard_decorator() -> None:
    for decorate in (dataclasses.dataclass, lite.dataclass):
        with pytest.raises(TypeError):
            @decorate
            class Order:
                a: int = 0
                b: int
        with pytest.raises(ValueError):
            @decorate
            class Mutable:
                a: list[int] = []  # noqa: RUF012


def test_the_product_uses_the_lite_decorator() -> None:
    """The hot path's records are built without code generation (the reason this exists)."""
    from magicstick_host.domain import evidence, state

    for module in (evidence, state):
        classes = [v for v in vars(module).values()
                   if isinstance(v, type) and v.__module__ == module.__name__
                   and dataclasses.is_dataclass(v)]
        assert classes
        for cls in classes:  # the standard decorator's __init__ is compiled from "<string>"
            assert cls.__init__.__code__.co_filename == lite.__file__, cls


def test_the_signature_names_the_fields_and_which_are_required() -> None:
    import inspect

    std, mine = pair(True)
    mine_params = inspect.signature(mine).parameters
    assert list(mine_params) == list(inspect.signature(std).parameters)
    required = [n for n, p in mine_params.items() if p.default is inspect.Parameter.empty]
    assert required == ["name"]


def test_the_modules_own_functions_match_the_standard_ones() -> None:
    std, mine = pair(True)
    s, m = std("a", 2, ("t",), "s"), mine("a", 2, ("t",), "s")
    assert lite.asdict(m) == dataclasses.asdict(s)
    assert [f.name for f in lite.fields(mine)] == [f.name for f in dataclasses.fields(std)]
    assert lite.is_dataclass(m) and lite.is_dataclass(mine) and not lite.is_dataclass(object())
    assert lite.replace(m, name="b") == mine("b", 2, ("t",), "s")
    with pytest.raises(TypeError):
        lite.replace(m, colour="red")


def test_the_modules_functions_take_standard_dataclasses_too() -> None:
    """An operation's data record may be a standard dataclass (tests/domain/toy_operation.py)."""
    std, _ = pair(True)
    item = std("a", 2, ("t",), "s")
    assert lite.is_dataclass(std) and lite.is_dataclass(item)
    assert [f.name for f in lite.fields(std)] == ["name", "size", "tags", "secret"]
    assert lite.asdict(item) == dataclasses.asdict(item)
    assert lite.replace(item, size=5) == std("a", 5, ("t",), "s")
