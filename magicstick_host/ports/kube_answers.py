"""What a Kubernetes answer says: its body decoded within the bounds (domain/strict_json.py,
KUBE_ANSWER), and the taxonomy error of an HTTP status with the server's own message."""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.strict_json import KUBE_ANSWER
from magicstick_host.errors import (
    KubeConflictError,
    KubeNotFoundError,
    KubePermanentError,
    KubeTemporaryError,
    KubeUnreadableError,
)

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


# the parts of an object the worker reasons over, and the JSON type each must have when present
_STRING_MAPS = ("annotations", "labels")
_NODE_STATUS_PARTS = {"nodeInfo": dict, "allocatable": dict, "capacity": dict, "addresses": list}


def _shape_problem(doc: Json) -> str:
    """What makes an object's answer unfit to reason over ("" when it is fit): the worker decides
    from its metadata (a UID that changed ends an operation), so a garbled one must read as
    "cannot tell", never as "deleted", "replaced" or "changed"."""
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        return "metadata is not an object"
    uid = meta.get("uid")
    if not isinstance(uid, str) or not uid:
        return "metadata.uid is not a non-empty string"
    for key in ("name", "namespace", "resourceVersion"):
        if key in meta and not isinstance(meta[key], str):
            return f"metadata.{key} is not a string"
    for key in _STRING_MAPS:
        value = meta.get(key)
        if value is not None and not (
            isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
        ):
            return f"metadata.{key} is not a map of strings"
    for key in ("spec", "status", "data"):
        if key in doc and doc[key] is not None and not isinstance(doc[key], dict):
            return f"{key} is not an object"
    if doc.get("kind") == "Node" and isinstance(doc.get("status"), dict):
        for key, kind in _NODE_STATUS_PARTS.items():
            value = doc["status"].get(key)
            if value is not None and not isinstance(value, kind):
                return f"status.{key} is not a JSON {'object' if kind is dict else 'array'}"
    return ""


def checked_object(doc: Json, what: str) -> Json:
    """One object as read by GET: KubeUnreadableError when its metadata, spec or status is not
    what every object of the API has (a hostile proxy, a broken server)."""
    problem = _shape_problem(doc)
    if problem:
        raise KubeUnreadableError(f"{what}: the object cannot be read: {problem}", problem)
    return doc


def identity(doc: Json, what: str) -> tuple[str, str]:
    """(metadata.uid, metadata.resourceVersion) of a well-formed object that has both."""
    meta = checked_object(doc, what)["metadata"]
    version = meta.get("resourceVersion")
    if not isinstance(version, str) or not version:
        raise KubeUnreadableError(f"{what}: the object cannot be read: it has no "
                                  "metadata.resourceVersion", "no metadata.resourceVersion")
    return str(meta["uid"]), version
