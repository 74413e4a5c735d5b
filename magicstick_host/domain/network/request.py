"""The network request Secret (network.md, "The request"): is this the Secret the request
names, and what settings does it carry? Pure.

The settings never travel in the HostOperation: its `networkRef` names a Secret in
`host-management` that the dashboard created immutable, typed and labelled for this request
and this node. The worker reads it once (`read_request_secret`), then deletes it with a UID
precondition. `stale_request_secrets` names the request Secrets of this node that nobody
consumed within 10 minutes, so that a request that was never accepted leaves no password behind.
"""

from __future__ import annotations

import binascii
import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from magicstick_host.domain.strict_json import loads_strict
from magicstick_host.lite_dataclasses import dataclass

if TYPE_CHECKING:
    from typing import Any

SECRET_NAMESPACE = "host-management"
SECRET_TYPE = "appliance.magicstick.dev/network-request"
REQUEST_ID_LABEL = "appliance.magicstick.dev/request-id"
NODE_LABEL = "appliance.magicstick.dev/network-node"
SETTINGS_KEY = "settings.json"
NAME_PREFIX = "host-network-"
NETWORK_REF = re.compile(r"^host-network-[0-9a-f]{32}$")
MAX_SETTINGS_BYTES = 8192
STALE_AFTER = timedelta(minutes=10)


@dataclass(frozen=True)
class NetworkRef:
    name: str
    uid: str


@dataclass(frozen=True)
class RequestSettings:
    """The decoded `settings.json` (not yet checked against the rules) and the Secret's UID,
    the precondition of its deletion."""

    settings: Any
    secret_uid: str


@dataclass(frozen=True)
class SecretProblem:
    message: str


def network_ref(spec: dict[str, Any], request_id: str) -> NetworkRef | SecretProblem:
    """The request's `networkRef`: `{name: "host-network-" + requestId, uid}`."""
    ref = spec.get("networkRef")
    if not isinstance(ref, dict) or set(ref) != {"name", "uid"}:
        return SecretProblem("A network request needs networkRef {name, uid}.")
    name, uid = ref["name"], ref["uid"]
    if not isinstance(name, str) or name != NAME_PREFIX + request_id:
        return SecretProblem(f"networkRef.name must be {NAME_PREFIX}<requestId>.")
    if not isinstance(uid, str) or not 1 <= len(uid) <= 64:
        return SecretProblem("networkRef.uid must be 1–64 characters.")
    return NetworkRef(name, uid)


def read_request_secret(
    secret: dict[str, Any] | None, ref: NetworkRef, *, request_id: str, node_uid: str
) -> RequestSettings | SecretProblem:
    """The settings of the Secret the request names, if it is exactly that Secret."""
    if secret is None:
        return SecretProblem(
            f"The settings Secret {SECRET_NAMESPACE}/{ref.name} does not exist (it may have "
            "been consumed or removed already); nothing was changed."
        )
    meta = secret.get("metadata") if isinstance(secret.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    where = f"The settings Secret {SECRET_NAMESPACE}/{ref.name}"
    if meta.get("name") != ref.name or meta.get("namespace") != SECRET_NAMESPACE:
        return SecretProblem(f"{where} is not the object the request names.")
    if meta.get("uid") != ref.uid:
        return SecretProblem(f"{where} has another UID than the request names (it was "
                             "replaced); nothing was changed.")
    if meta.get("deletionTimestamp"):
        return SecretProblem(f"{where} is being deleted; nothing was changed.")
    if secret.get("immutable") is not True:
        return SecretProblem(f"{where} is not immutable; nothing was changed.")
    if secret.get("type") != SECRET_TYPE:
        return SecretProblem(f"{where} does not have the type {SECRET_TYPE}.")
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    assert isinstance(labels, dict)
    if labels.get(REQUEST_ID_LABEL) != request_id:
        return SecretProblem(f"{where} is labelled for another request.")
    if labels.get(NODE_LABEL) != node_uid:
        return SecretProblem(f"{where} is labelled for another node.")
    data = secret.get("data")
    if not isinstance(data, dict) or set(data) != {SETTINGS_KEY}:
        return SecretProblem(f"{where} must hold exactly one key, {SETTINGS_KEY}.")
    decoded = strict_base64(data[SETTINGS_KEY])
    if decoded is None:
        return SecretProblem(f"{where}: {SETTINGS_KEY} is not valid base64.")
    if len(decoded) > MAX_SETTINGS_BYTES:
        return SecretProblem(f"{where}: {SETTINGS_KEY} is larger than {MAX_SETTINGS_BYTES} "
                             "bytes.")
    try:
        settings = loads_strict(decoded, max_depth=4)
    except ValueError:
        # the reason could quote the content, which may be a password: say only what it is not
        return SecretProblem(f"{where}: {SETTINGS_KEY} is not one valid JSON document.")
    if not isinstance(settings, dict):
        return SecretProblem(f"{where}: {SETTINGS_KEY} is not a JSON object.")
    return RequestSettings(settings=settings, secret_uid=ref.uid)


def strict_base64(value: Any) -> bytes | None:
    """Canonical base64 (the alphabet, padding, no whitespace, no stray bits), else None."""
    if not isinstance(value, str) or not value.isascii():
        return None
    try:
        decoded = binascii.a2b_base64(value.encode("ascii"), strict_mode=True)
    except (binascii.Error, ValueError):
        return None
    if binascii.b2a_base64(decoded, newline=False).decode("ascii") != value:
        return None
    return decoded


def _created(meta: dict[str, Any]) -> datetime | None:
    stamp = meta.get("creationTimestamp")
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None


def stale_request_secrets(
    secrets: list[dict[str, Any]], *, node_uid: str, now: datetime
) -> list[tuple[str, str]]:
    """(name, uid) of this node's request Secrets created more than 10 minutes ago."""
    stale: list[tuple[str, str]] = []
    for secret in secrets:
        meta = secret.get("metadata")
        if not isinstance(meta, dict):
            continue
        labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
        assert isinstance(labels, dict)
        name, uid = meta.get("name"), meta.get("uid")
        if not (isinstance(name, str) and NETWORK_REF.match(name) and isinstance(uid, str)):
            continue
        if labels.get(NODE_LABEL) != node_uid or secret.get("type") != SECRET_TYPE:
            continue
        created = _created(meta)
        if created is not None and now - created > STALE_AFTER:
            stale.append((name, uid))
    return stale


def sweep_due(last: dict[str, Any] | None, *, boot_id: str, boottime: float,
              interval_s: float) -> bool:
    """Whether the stale request Secrets are looked for now: `last` is the record of the last
    look ({"bootId", "boottime"}); none, another boot or a clock that went back means now."""
    if not isinstance(last, dict) or not boot_id or last.get("bootId") != boot_id:
        return True
    then = last.get("boottime")
    if not isinstance(then, (int, float)) or isinstance(then, bool):
        return True
    return not 0 <= boottime - then < interval_s
