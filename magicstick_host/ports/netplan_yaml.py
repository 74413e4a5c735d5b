"""Netplan YAML: the files of /etc/netplan and the output of `netplan get`, read and written
(the file format at the edge: collect/ reads with it, effects/ and the simulator write).

netplan reads YAML with libyaml and gives each scalar its type by the key it sits under,
whatever its quoting (`dhcp4: "yes"` is true, `metric: "100"` is 100). PyYAML's YAML 1.1
resolvers would instead guess types from the text (an unquoted MAC `52:54:00:12:34:56` is a
sexagesimal integer to them, a password `yes` a boolean). So the loader here keeps every
scalar a string, as netplan sees it before typing, except an empty or `~`/`null` plain scalar
(None); `netplan_bool`/`netplan_int` type a value the way netplan does. Duplicate keys,
aliases, merge keys and non-scalar keys are refused: the worker reads a file the way netplan
does or not at all. The dumper writes typed values plainly and quotes every string that a YAML
reader could take for something else.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import yaml

from magicstick_host.domain.parsers.common import ParseError, shorten
from magicstick_host.domain.parsers.netplan import NULL_WORDS, netplan_bool

if TYPE_CHECKING:
    from typing import Any

_NULL = NULL_WORDS
MAX_DEPTH = 32


class _NetplanLoader(yaml.SafeLoader):
    """Every scalar a string (empty/~/null plain scalars None), keys strings, no aliases."""

    yaml_implicit_resolvers: dict[Any, Any] = {}  # noqa: RUF012 (PyYAML's class attribute)

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, yaml.MappingNode):
            raise yaml.constructor.ConstructorError(
                None, None, f"expected a mapping, found {node.id}", node.start_mark
            )
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise yaml.constructor.ConstructorError(
                    None, None, "merge keys (<<) are not netplan", key_node.start_mark
                )
            if not isinstance(key_node, yaml.ScalarNode):
                raise yaml.constructor.ConstructorError(
                    None, None, "a key is not a scalar", key_node.start_mark
                )
            key = str(key_node.value)
            if key in mapping:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {shorten(key)!r}", key_node.start_mark
                )
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_scalar(self, node: Any) -> Any:
        value = super().construct_scalar(node)
        if node.style is None and str(value).lower() in _NULL:
            return None
        return str(value)

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, "aliases are not used in netplan files", event.start_mark
            )
        return super().compose_node(parent, index)


    def construct_object(self, node: Any, deep: bool = False) -> Any:
        if node.tag not in _PLAIN_TAGS:
            raise yaml.constructor.ConstructorError(
                None, None, f"explicit YAML tags are not netplan: {shorten(str(node.tag))}",
                node.start_mark,
            )
        return super().construct_object(node, deep=deep)


_PLAIN_TAGS = frozenset(
    {"tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}
)


def _construct_str(loader: _NetplanLoader, node: Any) -> Any:
    return loader.construct_scalar(node)


_NetplanLoader.add_constructor("tag:yaml.org,2002:str", _construct_str)


def _depth(doc: Any) -> int:
    deepest, pending = 0, [(doc, 0)]
    while pending:
        node, depth = pending.pop()
        deepest = max(deepest, depth)
        if isinstance(node, dict):
            pending.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            pending.extend((child, depth + 1) for child in node)
    return deepest


def load_netplan_yaml(text: str) -> dict[str, Any]:
    """One netplan document as a mapping ({} for an empty file). ParseError otherwise."""
    try:
        docs = list(yaml.load_all(text, Loader=_NetplanLoader))
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        reason = " ".join(str(exc).split())
        raise ParseError(f"not netplan YAML: {shorten(reason, 160)}") from None
    except RecursionError:
        raise ParseError("not netplan YAML: nested too deeply") from None
    if len(docs) > 1:
        raise ParseError("more than one YAML document")
    doc = docs[0] if docs else None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ParseError("the document is not a mapping")
    if _depth(doc) > MAX_DEPTH:
        raise ParseError("nested too deeply")
    return doc


class _NetplanDumper(yaml.SafeDumper):
    """Block style; a string that could be read as another type is double-quoted."""


_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> Any:
    bare = (
        _BARE.fullmatch(value) is not None
        and netplan_bool(value) is None
        and value.lower() not in _NULL
        and not re.fullmatch(r"[0-9a-fA-F:]+|[0-9.eE+-]+", value)
    )
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=None if bare else '"')


def _represent_none(dumper: yaml.SafeDumper, value: None) -> Any:
    return dumper.represent_scalar("tag:yaml.org,2002:null", "")


_NetplanDumper.add_representer(str, _represent_str)
_NetplanDumper.add_representer(type(None), _represent_none)


def dump_netplan_yaml(doc: dict[str, Any]) -> str:
    """`doc` as netplan YAML; `load_netplan_yaml` reads it back to the same mapping with
    every bool and int as its string spelling."""
    return yaml.dump(
        doc,
        Dumper=_NetplanDumper,
        default_flow_style=False,
        sort_keys=False,
        allow_unicode=True,
        width=4096,
    )


MANAGED_HEADER = (
    "# Managed by magicstick-host (System > Settings > Network). It holds the whole netplan\n"
    "# configuration of this host; the files it replaced are restored if the change is not\n"
    "# confirmed. Change the network from the dashboard, not here.\n"
)


def render_managed(document: dict[str, Any]) -> str:
    """The managed file's text: the header, then `document` (`{"network": ...}`)."""
    return MANAGED_HEADER + dump_netplan_yaml(document)
