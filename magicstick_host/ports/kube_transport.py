"""The seam under the Kubernetes port (ports/kube.py): one HTTP exchange. Two implement it:
the lean transport (kube_http.py) and the official client (kube_official.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from typing import Any

JSON = "application/json"


class Transport(Protocol):
    """One HTTP exchange, within `timeout` seconds from connect to the last body byte.

    Returns (status, body) for any HTTP answer; KubeTemporaryError when there is none in time.
    """

    name: str

    def request(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]],
        body: dict[str, Any] | None,
        content_type: str,
        timeout: float,
        accept: str = JSON,
    ) -> tuple[int, bytes]: ...
