"""What a Kubernetes answer says: its body decoded within the bounds (domain/strict_json.py,
KUBE_ANSWER), and the taxonomy error of an HTTP status with the server's own message."""

from __future__ import annotations

from magicstick_host.domain.strict_json import KUBE_ANSWER
from magicstick_host.errors import (
    KubeConflictError,
    KubeNotFoundError,
    KubePermanentError,
    KubeTemporaryError,
    KubeUnreadableError,
)
from magicstick_host.static import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

    Json = dict[str, Any]


def api_message(body: str) -> str:
    try:
        parsed = KUBE_ANSWER.loads(body)
    except ValueError:
        return body[:500]
    if isinstance(parsed, dict) and isinstance(parsed.get("message"), str):
        return str(parsed["message"])
    return body[:500]


def error_for(status: int, what: str, body: str = "") -> Exception:
    """The taxonomy error for an HTTP status (status 0: no HTTP answer at all)."""
    detail = f"{what}: HTTP {status}: {api_message(body)}" if status else f"{what}: {body}"
    if status == 0 or status == 429 or status >= 500:
        return KubeTemporaryError(detail)
    if status == 404:
        return KubeNotFoundError(detail)
    if status == 409:
        return KubeConflictError(detail)
    return KubePermanentError(detail)


def decode_answer(raw: bytes, what: str) -> Json:
    """A 2xx answer's body as a JSON object ({} when empty); KubeUnreadableError otherwise."""
    if not raw:
        return {}
    try:
        parsed = KUBE_ANSWER.loads(raw)
    except ValueError as exc:
        raise KubeUnreadableError(f"{what}: the answer cannot be read: {exc}", str(exc)) from None
    if not isinstance(parsed, dict):
        raise KubeUnreadableError(f"{what}: the answer is not a JSON object",
                                  "not a JSON object")
    return parsed
