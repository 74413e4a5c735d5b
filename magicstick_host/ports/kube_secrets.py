"""The network request Secrets (network.md, "The request"), as a part of the Kubernetes port:
read once, listed by label (the stale ones), deleted only with their UID as a precondition.

`NetworkSecretsPort` is mixed into `KubePort`, `NetworkSecrets` into `RealKube`; every call
goes through RealKube's `_request`, so the port's timeout and tick budget bound it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol
from urllib.parse import quote

from magicstick_host.errors import KubeTemporaryError

if TYPE_CHECKING:
    from typing import Any

    Json = dict[str, Any]


class NetworkSecretsPort(Protocol):
    def get_secret(self, namespace: str, name: str) -> Json | None:
        """The Secret, or None when it does not exist."""
        ...

    def list_secrets(self, namespace: str, label_selector: str) -> list[Json]:
        """The Secrets of `namespace` that match the label selector."""
        ...

    def delete_secret(self, namespace: str, name: str, uid: str) -> None:
        """Delete it only if it still has this UID (KubeConflictError otherwise,
        KubeNotFoundError when it is gone)."""
        ...


def _secrets(namespace: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/secrets"


class NetworkSecrets:
    """RealKube's Secret calls (RealKube provides `_request` and `_get_or_none`)."""

    _request: Callable[..., Json]
    _get_or_none: Callable[[str], Json | None]

    def get_secret(self, namespace: str, name: str) -> Json | None:
        return self._get_or_none(f"{_secrets(namespace)}/{quote(name, safe='')}")

    def list_secrets(self, namespace: str, label_selector: str) -> list[Json]:
        found = self._request("GET", _secrets(namespace),
                              query=[("labelSelector", label_selector)])
        items = found.get("items")
        if not isinstance(items, list):
            raise KubeTemporaryError(f"list secrets in {namespace}: the answer has no items")
        return [item for item in items if isinstance(item, dict)]

    def delete_secret(self, namespace: str, name: str, uid: str) -> None:
        if not uid:
            raise ValueError("delete_secret needs the Secret's UID as a precondition")
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}}
        self._request("DELETE", f"{_secrets(namespace)}/{quote(name, safe='')}", body)
