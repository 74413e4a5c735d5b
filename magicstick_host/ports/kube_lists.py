"""Paged lists over the Kubernetes port (the model-cache blockers: ModelActivations, KubeAI
Models, Pods, all namespaces).

A list is paged (LIST_PAGE objects per request) and all its pages together take at most one
call's timeout, within the enclosing budgets. A 404 is a missing CRD only if discovery agrees;
otherwise it is an error like any other (the caller: "cannot tell").

A page the bounded decoder refuses (one object nested 2000 levels, say: both model CRDs keep
unknown fields) does not end the list unnamed. The page is read again as the objects' metadata
(PartialObjectMetadataList), each object of it is read on its own, and the ones that cannot
be read either are named in the KubeUnreadableError that ends the list, once every page has
been read: "cannot tell", with namespace/name. An object's metadata holds its managedFields,
which mirror a deep spec level for level, so the metadata page may be unreadable too; its
objects are then named from the answer's bytes (`_named_in`), which the apiserver writes in
ObjectMeta's field order (name, generateName, namespace, ... managedFields last). Those names
only say what to read on its own: each object is still decoded within the bounds, or named as
unreadable, never trusted unread.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol
from urllib.parse import quote

from magicstick_host.domain.strict_json import KUBE_ANSWER
from magicstick_host.errors import KubeNotFoundError, KubeTemporaryError, KubeUnreadableError

if TYPE_CHECKING:
    from typing import Any

LIST_PAGE = 250
MAX_LIST_PAGES = 40
# at most this many unreadable objects are named in the error; the rest are counted
NAMED_UNREADABLE = 3
if TYPE_CHECKING:
    Json = dict[str, Any]

_STRING = r'"(?:[^"\\]|\\.){0,400}"'
_ITEM = re.compile(
    r'\{"kind":"PartialObjectMetadata","apiVersion":"meta\.k8s\.io/v1","metadata":\{"name":('
    + _STRING + r')(?:,"generateName":' + _STRING + r')?(?:,"namespace":(' + _STRING + r'))?'
)
_LIST_META = re.compile(
    r'\{"kind":"PartialObjectMetadataList","apiVersion":"meta\.k8s\.io/v1","metadata":'
    r'(\{[^{}]{0,8192}\})'
)
# what a name or namespace in a path may be (DNS subdomain names, as the apiserver requires)
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")


class Lister(Protocol):
    timeout: float

    def budget(self, seconds: float, *, apart: bool = False) -> AbstractContextManager[None]:
        ...

    def serves(self, group_version: str, plural: str) -> bool: ...


class Salvager(Protocol):
    """What reads a page whose objects cannot all be decoded, object by object."""

    def metadata_page(self, path: str, query: list[tuple[str, str]]) -> bytes: ...

    def get_one(self, path: str) -> Json | None: ...


# one GET of a page: (path, query) -> the answer
if TYPE_CHECKING:
    Page = Callable[[str, list[tuple[str, str]]], Json]


def list_or_none(kube: Lister, api_version: str, plural: str, page: Page,
                 salvager: Salvager | None = None) -> list[Json] | None:
    """Every object of a resource, all namespaces; None when the cluster does not serve it
    ("v1": the core API)."""
    prefix = "/apis/" if "/" in api_version else "/api/"
    try:
        return list_all(kube, f"{prefix}{api_version}/{plural}", page, salvager)
    except KubeNotFoundError:
        if kube.serves(api_version, plural):
            raise
        return None


def list_all(kube: Lister, path: str, page: Page, salvager: Salvager | None = None) -> list[Json]:
    items: list[Json] = []
    unreadable: list[str] = []
    token = ""
    with kube.budget(kube.timeout):
        for _ in range(MAX_LIST_PAGES):
            query = [("limit", str(LIST_PAGE))] + ([("continue", token)] if token else [])
            try:
                answer = page(path, query)
            except KubeUnreadableError as exc:
                if salvager is None:
                    raise
                answer = _salvage(salvager, path, query, exc, unreadable)
            found = answer.get("items")
            if not isinstance(found, list):
                raise KubeTemporaryError(f"GET {path}: the answer has no list of items")
            items.extend(item for item in found if isinstance(item, dict))
            token = str((answer.get("metadata") or {}).get("continue") or "")
            if not token:
                if unreadable:
                    raise _unreadable(path, unreadable)
                return items
    raise KubeTemporaryError(
        f"GET {path}: more than {MAX_LIST_PAGES * LIST_PAGE} objects; not read to the end"
    )


def _unreadable(path: str, lost: list[str]) -> KubeUnreadableError:
    named = ", ".join(lost[:NAMED_UNREADABLE])
    more = len(lost) - NAMED_UNREADABLE
    count = "1 object" if len(lost) == 1 else f"{len(lost)} objects"
    return KubeUnreadableError(
        f"GET {path}: {count} cannot be read: {named}" + (f" and {more} more" if more > 0 else "")
    )


def _salvage(salvager: Salvager, path: str, query: list[tuple[str, str]],
             exc: KubeUnreadableError, unreadable: list[str]) -> Json:
    """The page read object by object; the objects that cannot be read go to `unreadable`."""
    raw = salvager.metadata_page(path, query)
    names, token = _page_names(raw)
    if names is None:
        raise KubeUnreadableError(f"{exc}; its objects cannot be named either", exc.reason)
    base, plural = path.rsplit("/", 1)
    objects: list[Json] = []
    for namespace, name in names:
        scope = f"/namespaces/{quote(namespace, safe='')}" if namespace else ""
        try:
            obj = salvager.get_one(f"{base}{scope}/{plural}/{quote(name, safe='')}")
        except KubeUnreadableError as lost:
            unreadable.append(f"{namespace}/{name} ({lost.reason})" if namespace
                              else f"{name} ({lost.reason})")
            continue
        if obj is not None:  # None: deleted meanwhile
            objects.append(obj)
    return {"items": objects, "metadata": {"continue": token}}


def _page_names(raw: bytes) -> tuple[list[tuple[str, str]] | None, str]:
    """(namespace, name) of every object of a metadata page and its continue token; None
    when the objects cannot be named."""
    try:
        doc = KUBE_ANSWER.loads(raw)
    except ValueError:
        return _named_in(raw)
    items = doc.get("items") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        return None, ""
    names: list[tuple[str, str]] = []
    for item in items:
        meta = item.get("metadata") if isinstance(item, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        found = _checked(meta.get("namespace") or "", meta.get("name"))
        if found is None:
            return None, ""
        names.append(found)
    return names, str((doc.get("metadata") or {}).get("continue") or "")


def _named_in(raw: bytes) -> tuple[list[tuple[str, str]] | None, str]:
    """The names the bytes of an undecodable metadata page hold (module docstring)."""
    text = raw.decode("utf-8", errors="replace")
    listed = _LIST_META.match(text)
    if listed is None:
        return None, ""
    try:
        meta = KUBE_ANSWER.loads(listed.group(1))
    except ValueError:
        return None, ""
    token = meta.get("continue") if isinstance(meta, dict) else None
    names: list[tuple[str, str]] = []
    for match in _ITEM.finditer(text):
        try:
            name = json.loads(match.group(1))
            namespace = json.loads(match.group(2)) if match.group(2) else ""
        except ValueError:
            return None, ""
        found = _checked(namespace, name)
        if found is None:
            return None, ""
        names.append(found)
    return (names or None), token if isinstance(token, str) else ""


def _checked(namespace: Any, name: Any) -> tuple[str, str] | None:
    if not isinstance(name, str) or not isinstance(namespace, str):
        return None
    if not _NAME.fullmatch(name) or (namespace and not _NAME.fullmatch(namespace)):
        return None
    return namespace, name
