"""magicstick_host/static.py: `type_hints` reads a class's annotations as typing's
get_type_hints does, though its module imports typing's names for the checker only."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import magicstick_host
from magicstick_host import lite_dataclasses
from magicstick_host.static import ANNOTATION_NAMES, type_hints

REPO = Path(__file__).resolve().parents[1]


def dataclasses_of_the_package() -> list[type]:
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(magicstick_host.__path__, "magicstick_host."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (isinstance(value, type) and lite_dataclasses.is_dataclass(value)
                    and value.__module__ == info.name):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[name] for name in sorted(found)]


CLASSES = dataclasses_of_the_package()


def test_the_package_has_classes_to_compare() -> None:
    assert len(CLASSES) > 100
    names = {c.__qualname__ for c in CLASSES}
    assert {"Evidence", "Host", "NoData"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_type_hints_are_get_type_hints(cls: type) -> None:
    typing_names = {name: getattr(typing, name) for name in ANNOTATION_NAMES}
    try:
        expected = typing.get_type_hints(cls, localns=typing_names)
    except NameError:  # a name its module imports for the checker only: not a record's field
        with pytest.raises(NameError):
            type_hints(cls)
        return
    assert type_hints(cls) == expected


def test_a_module_name_comes_before_typings() -> None:
    namespace: dict[str, object] = {}
    exec("from __future__ import annotations\n"
         "class Any: pass\n"
         "class Record:\n    value: Any\n    count: int | None\n    none: None\n", namespace)
    record = namespace["Record"]
    assert isinstance(record, type)
    record.__module__ = __name__
    sys.modules[__name__].Any = namespace["Any"]  # type: ignore[attr-defined]
    try:
        assert type_hints(record) == {"value": namespace["Any"], "count": int | None,
                                      "none": type(None)}
    finally:
        del sys.modules[__name__].Any  # type: ignore[attr-defined]


@pytest.mark.real_commands  # a fresh interpreter, to see what it imports
def test_the_stand_in_protocol_is_a_plain_base() -> None:
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c",
         "import sys; sys.path.insert(0, sys.argv[1]); from magicstick_host import static; "
         "from magicstick_host.ports.runner import CommandRunner; "
         "print(CommandRunner.__mro__[1] is static.Protocol, 'typing' in sys.modules)",
         str(REPO)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]
