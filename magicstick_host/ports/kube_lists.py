"""Paged lists over the Kubernetes port (the model-cache blockers: ModelActivations, KubeAI
Models, Pods, all namespaces).

A list is paged (LIST_PAGE objects per request) and all its pages together take at most one
call's timeout, within the enclosing budgets. A 404 is a missing CRD only if discovery agrees;
otherwise it is an error like any other (the caller: "cannot tell").
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from magicstick_host.errors import KubeNotFoundError, KubeTemporaryError
from magicstick_host.static import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from typing import Any

LIST_PAGE = 250
MAX_LIST_PAGES = 40
if TYPE_CHECKING:
    Json = dict[str, Any]


class Lister(Protocol):
    timeout: float

    def budget(self, seconds: float, *, apart: bool = False) -> AbstractContextManager[None]:
        ...

    def serves(self, group_version: str, plural: str) -> bool: ...


# one GET of a page: (path, query) -> the answer
if TYPE_CHECKING:
    Page = Callable[[str, list[tuple[str, str]]], Json]


def list_or_none(kube: Lister, api_version: str, plural: str, page: Page) -> list[Json] | None:
    """Every object of a resource, all namespaces; None when the cluster does not serve it
    ("v1": the core API)."""
    prefix = "/apis/" if "/" in api_version else "/api/"
    try:
        return list_all(kube, f"{prefix}{api_version}/{plural}", page)
    except KubeNotFoundError:
        if kube.serves(api_version, plural):
            raise
        return None


def list_all(kube: Lister, path: str, page: Page) -> list[Json]:
    items: list[Json] = []
    token = ""
    with kube.budget(kube.timeout):
        for _ in range(MAX_LIST_PAGES):
            query = [("limit", str(LIST_PAGE))] + ([("continue", token)] if token else [])
            answer = page(path, query)
            found = answer.get("items")
            if not isinstance(found, list):
                raise KubeTemporaryError(f"GET {path}: the answer has no list of items")
            items.extend(item for item in found if isinstance(item, dict))
            token = str((answer.get("metadata") or {}).get("continue") or "")
            if not token:
                return items
    raise KubeTemporaryError(
        f"GET {path}: more than {MAX_LIST_PAGES * LIST_PAGE} objects; not read to the end"
    )
