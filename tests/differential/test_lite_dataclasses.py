"""lite_dataclasses against dataclasses on generated class definitions, with the running
interpreter's semantics (3.13 compares field by field: `C(nan) == C(nan)` is False).

The same source, once decorated by each, in a module of its own: a base class and a class over
it, frozen or not, fields with and without defaults, `field(...)` with default, factory, repr
and compare, mutable defaults, a `field()` without an annotation, re-annotated inherited fields,
ClassVar by name, through typing and through a module alias, or imported only for the checker,
with and without `from __future__ import annotations`, a base made by the standard decorator.
What the standard refuses, lite refuses; what lite builds behaves as the standard's class does
(construction and its errors, repr, ==, hash, frozen assignment, fields and their defaults).

Divergences that stay (lite refuses with a TypeError at definition; the product needs none):
- a class over a standard dataclass (lite would lose its fields, InitVars and options);
- InitVar fields; every decorator option but `frozen` (an unexpected keyword argument).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import sys
import types
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magicstick_host import lite_dataclasses

ANNOTATIONS = ["int", "int", "float", "list[int]", "ClassVar[int]", "typing.ClassVar[int]",
               "t.ClassVar[int]", "tuple[int, ...]"]
DEFAULTS = ["", "", " = 1", " = 2.5", " = float('nan')", " = field(default=3)",
            " = field(default_factory=list)", " = field(repr=False)", " = field(compare=False)",
            " = field(default=4, compare=False)", " = []", " = field(default=[])",
            " = dataclasses.field(default=5)"]
_counter = itertools.count()


@st.composite
def body(draw: Any, names: list[str]) -> list[str]:
    lines = []
    for name in draw(st.lists(st.sampled_from(names), max_size=3, unique=True)):
        if draw(st.integers(0, 12)) == 0:
            lines.append(f"{name} = field(default=1)")  # no annotation
        else:
            lines.append(f"{name}: {draw(st.sampled_from(ANNOTATIONS))}"
                         f"{draw(st.sampled_from(DEFAULTS))}")
    return lines or ["pass"]


@st.composite
def sources(draw: Any) -> str:
    future = draw(st.booleans())
    classvar = draw(st.sampled_from(["from typing import ClassVar",
                                     "if typing.TYPE_CHECKING:\n    from typing import ClassVar",
                                     ""]))
    base_decorator = draw(st.sampled_from(["@dataclass(frozen=True)", "@dataclass",
                                           "@dataclasses.dataclass", ""]))
    sub_frozen = draw(st.booleans())
    lines = ["from __future__ import annotations" if future else "",
             "import dataclasses", "import typing", "import typing as t", classvar,
             "from DECORATOR import dataclass, field", "", base_decorator, "class Base:"]
    base = draw(body(["a", "b"]))
    if base_decorator == "@dataclasses.dataclass":  # its fields the standard's own
        base = [line.replace("= field(", "= dataclasses.field(") for line in base]
    lines += ["    " + line for line in base]
    lines += ["", f"@dataclass(frozen={sub_frozen})", "class Sub(Base):"]
    lines += ["    " + line for line in draw(body(["b", "c", "d"]))]
    return "\n".join(lines) + "\n"


def build(source: str, decorator: str) -> tuple[types.ModuleType | None, BaseException | None]:
    module = types.ModuleType(f"_differential_dc_{next(_counter)}")
    sys.modules[module.__name__] = module  # where dataclasses looks ClassVar up
    try:
        exec(compile(source.replace("DECORATOR", decorator), module.__name__, "exec"),
             module.__dict__)
    except Exception as exc:
        return None, exc
    finally:
        del sys.modules[module.__name__]
    return module, None


def outcome(call: Any) -> tuple[str, Any]:
    try:
        return "ok", call()
    except Exception as exc:
        return "error", type(exc).__name__.replace("FrozenInstanceError", "AttributeError")


def behaviour(module: types.ModuleType, args: tuple[Any, ...]) -> list[Any]:
    cls = module.Sub
    seen: list[Any] = []
    made = outcome(lambda: cls(*args))
    seen.append(made if made[0] == "error" else "made")
    seen.append([(f.name, f.default, f.default_factory, f.repr, f.compare)
                 for f in dataclasses.fields(cls)])
    seen.append(getattr(cls, "__match_args__", None))
    if made[0] == "ok":
        one, other = made[1], cls(*args)
        seen.append(repr(one))
        seen.append(outcome(lambda: one == other))
        seen.append(outcome(lambda: one == one))  # the identity case
        # the relation, not the value: a NaN's hash is its identity's
        seen.append(outcome(lambda: hash(one) == hash(other)))
        seen.append(outcome(lambda: setattr(one, "c", 9)))
        seen.append(dataclasses.asdict(one) if not any(
            isinstance(a, float) and math.isnan(a) for a in args) else None)
    return seen


def same(a: list[Any], b: list[Any]) -> bool:
    return repr(a) == repr(b)  # NaN defaults and values compare by their repr


def check(source: str, args: tuple[Any, ...]) -> None:
    standard, standard_error = build(source, "dataclasses")
    lite, lite_error = build(source, "magicstick_host.lite_dataclasses")
    if standard is None:
        assert lite is None, f"lite built what dataclasses refuses ({standard_error!r})"
        return
    if lite is None:  # only the listed refusals
        assert isinstance(lite_error, TypeError) and "standard dataclass" in str(lite_error), \
            lite_error
        return
    assert same(behaviour(standard, args), behaviour(lite, args))


NAN = float("nan")
ARGS = st.lists(st.sampled_from([1, 2.5, NAN, (1,), "x"]), max_size=4).map(tuple)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sources(), ARGS)
def test_a_generated_class_is_built_and_behaves_as_the_standard_one(source: str,
                                                                    args: tuple[Any, ...]) -> None:
    check(source, args)


HEAD = ("from __future__ import annotations\nimport dataclasses\nimport typing\n"
        "import typing as t\nfrom typing import ClassVar\n"
        "from DECORATOR import dataclass, field\n")


@pytest.mark.parametrize("source", [
    "@dataclass\nclass Base:\n    a = field(default=1)\n",
    "@dataclass\nclass Base:\n    a: int = 1\n"
    "@dataclass(frozen=True)\nclass Sub(Base):\n    b = 2\n",
    "@dataclass(frozen=True)\nclass Base:\n    a: int = 1\n"
    "@dataclass\nclass Sub(Base):\n    b = 2\n",
], ids=["field-without-annotation", "frozen-over-non-frozen", "non-frozen-over-frozen"])
def test_what_the_standard_refuses_lite_refuses_at_definition(source: str) -> None:
    """Issue 26: lite built each of these."""
    assert build(HEAD + source, "dataclasses")[0] is None
    _module, error = build(HEAD + source, "magicstick_host.lite_dataclasses")
    assert isinstance(error, TypeError)


def test_a_class_over_a_standard_dataclass_is_refused() -> None:
    """Issue 26: it was built without the base's fields."""
    source = (HEAD + "@dataclasses.dataclass\nclass Base:\n    a: int = 1\n"
              "@dataclass\nclass Sub(Base):\n    b: int = 2\n")
    _module, error = build(source, "magicstick_host.lite_dataclasses")
    assert isinstance(error, TypeError) and "standard dataclass" in str(error)


@pytest.mark.parametrize("source, args", [
    ("@dataclass\nclass Base:\n    a: int = 1\n@dataclass\nclass Sub(Base):\n    a: int\n", ()),
    ("@dataclass\nclass Base:\n    pass\n@dataclass\nclass Sub(Base):\n"
     "    n: t.ClassVar[int] = 3\n    a: int = 1\n", (2,)),
    ("@dataclass\nclass Base:\n    pass\n@dataclass\nclass Sub(Base):\n    a: float = 0.0\n",
     (NAN,)),
], ids=["reannotated-keeps-default", "classvar-through-alias", "nan-field"])
def test_what_lite_builds_behaves_as_the_standard_class(source: str,
                                                        args: tuple[Any, ...]) -> None:
    """Issue 26: a re-annotated inherited field lost its default, a ClassVar through a module
    alias became a field, and on 3.13+ C(nan) == C(nan) was True."""
    check(HEAD + source, args)


def test_lite_is_what_this_module_tests() -> None:
    assert build(HEAD + "@dataclass\nclass C:\n    a: int\n",
                 "magicstick_host.lite_dataclasses")[0].C.__lite_fields__  # type: ignore[union-attr]
    assert lite_dataclasses.dataclass is not dataclasses.dataclass
