"""How lite_dataclasses reads a class's annotations as dataclasses reads them: the class's own
annotations (PEP 649's lazy ones too), and which of them are ClassVar or InitVar, looked up
where the standard looks (the class's module, through a module alias too)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any


def is_classvar(annotation: Any, cls: type) -> bool:
    """As dataclasses decides it: only once typing is imported; a string annotation is a
    ClassVar when its first name, alone or after a module's, is typing.ClassVar where the
    class's module would look it up (`ClassVar[int]`, `typing.ClassVar`, `t.ClassVar` after
    `import typing as t`; not one imported only for the checker)."""
    typing = sys.modules.get("typing")
    if typing is None:
        return False
    if not isinstance(annotation, str):
        return annotation is typing.ClassVar or (
            type(annotation) is typing._GenericAlias
            and annotation.__origin__ is typing.ClassVar)
    module_name, name = leading_names(annotation)
    if name is None:
        return False
    module = sys.modules.get(cls.__module__)
    namespace = getattr(module, "__dict__", None)
    if module_name:
        namespace = typing.__dict__ if namespace and namespace.get(module_name) is typing \
            else None
    return bool(namespace) and namespace.get(name) is typing.ClassVar  # type: ignore[union-attr]


def leading_names(annotation: str) -> tuple[str | None, str | None]:
    """What dataclasses' _MODULE_IDENTIFIER_RE reads, without compiling a pattern: the
    optional module name before a dot, and the first name."""
    def word(text: str) -> tuple[str, str]:
        text = text.lstrip()
        end = 0
        while end < len(text) and (text[end].isalnum() or text[end] == "_"):
            end += 1
        return text[:end], text[end:]

    first, rest = word(annotation)
    if not first:
        return None, None
    after = rest.lstrip()
    if after.startswith("."):
        second, _ = word(after[1:])
        if second:
            return first, second
    return None, first


def own_annotations(cls: type) -> dict[str, Any]:
    """The class's own annotations (strings, under `from __future__ import annotations`)."""
    # read from the class namespace: inspect.get_annotations would import inspect
    found = cls.__dict__.get("__annotations__")  # noqa: RUF063
    if isinstance(found, dict):
        return found
    if "__annotate__" in cls.__dict__:  # evaluated lazily (PEP 649, Python 3.14)
        import annotationlib  # type: ignore[import-not-found,unused-ignore]

        own: dict[str, Any] = annotationlib.get_annotations(
            cls, format=annotationlib.Format.FORWARDREF)
        return own
    return {}


def is_initvar(annotation: Any, cls: type) -> bool:
    """An InitVar annotation, as dataclasses recognises one (then refused here)."""
    standard = sys.modules.get("dataclasses")
    if standard is None:
        return False
    if not isinstance(annotation, str):
        return annotation is standard.InitVar or type(annotation) is standard.InitVar
    module_name, name = leading_names(annotation)
    module = sys.modules.get(cls.__module__)
    namespace = getattr(module, "__dict__", None) or {}
    if module_name:
        namespace = standard.__dict__ if namespace.get(module_name) is standard else {}
    return name is not None and namespace.get(name) is standard.InitVar
