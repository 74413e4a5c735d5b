"""The names the type checker needs, at no cost to the interpreter.

Importing `typing` costs about 4.6 ms (Debian's 3.11 here; it builds its generic aliases), in
a tick the timer runs 5,760 times a day and an `inspect` with a 100 ms budget (issue "The idle
tick at the floor"). Every module has `from __future__ import annotations`, so no annotation is
evaluated, and the package imports typing's names for the checker alone:

    from magicstick_host.static import TYPE_CHECKING

    if TYPE_CHECKING:
        from typing import Any

mypy and ruff take any name TYPE_CHECKING as true (the interpreter sees False). Type aliases
and TypeVars sit in such a block too. `Protocol` is the one name needed at run time: the base
of the ports' structural types. For the checker it is typing's; for the interpreter a plain
class, which is all a Protocol is at run time here: nothing instantiates one or asks isinstance
of one, and the classes that implement one do not name it as a base. The modules that
evaluate annotations (domain/records.py, sim/codec.py) do it through `type_hints`, which
imports typing only for an annotation that names one of typing's names (a record's `Any` or
`Literal`). tests/test_layers.py fails when a module imports typing at run time, and the
import probes of inspect and of the ticks when they load it.
"""

from __future__ import annotations

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any
    from typing import Protocol as Protocol
else:
    class Protocol:
        """typing.Protocol, for the interpreter: a structural type is checked statically."""

        __slots__ = ()

# typing's names that the annotations of evaluated classes use (records, the simulator's model)
ANNOTATION_NAMES = ("Any", "ClassVar", "Literal", "Optional", "Union")


def type_hints(cls: type) -> dict[str, Any]:
    """typing.get_type_hints(cls) for classes whose modules import typing's names for the
    checker only: each annotation (a string) is evaluated as get_type_hints does, in the
    namespace of the module that declares it, with typing's ANNOTATION_NAMES beneath it."""
    import sys

    hints: dict[str, Any] = {}
    for base in reversed(cls.__mro__):
        # its own annotations, as get_type_hints reads them (the inspect module costs ~5 ms)
        annotations = base.__dict__.get("__annotations__", {})  # noqa: RUF063
        if not annotations:
            continue
        namespace = vars(sys.modules[base.__module__])
        for name, value in annotations.items():
            hints[name] = _evaluated(value, namespace, dict(vars(base)))
    return hints


def _evaluated(annotation: Any, namespace: dict[str, Any], class_names: dict[str, Any]) -> Any:
    if not isinstance(annotation, str):
        hint = annotation
    else:
        try:
            hint = eval(annotation, namespace, class_names)
        except NameError:
            # a name of typing's, which the module imports for the checker only; typing is
            # imported for the classes that use one (records), not for the others
            import typing

            beneath = {name: getattr(typing, name) for name in ANNOTATION_NAMES}
            hint = eval(annotation, {**beneath, **namespace}, class_names)
    return type(None) if hint is None else hint
