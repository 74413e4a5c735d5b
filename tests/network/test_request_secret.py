"""The request Secret, as pure checks: exactly the Secret the request names, or a reason."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magicstick_host.domain.network.request import (
    NetworkRef,
    RequestSettings,
    SecretProblem,
    network_ref,
    read_request_secret,
    stale_request_secrets,
    strict_base64,
    sweep_due,
)

REQUEST = "0123456789abcdef0123456789abcdef"
NODE = "5d8e7c1a-8f3e-4c44-9d3b-1f2e3a4b5c6d"
SETTINGS = {"interface": "wlp3s0", "mode": "dhcp", "ssid": "Home", "security": "wpa-psk",
            "password": "correct horse battery"}


def secret(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "metadata": {"name": f"host-network-{REQUEST}", "namespace": "host-management",
                     "uid": "secret-uid-1", "creationTimestamp": "2026-12-01T10:00:00Z",
                     "labels": {"appliance.magicstick.dev/request-id": REQUEST,
                                "appliance.magicstick.dev/network-node": NODE}},
        "immutable": True,
        "type": "appliance.magicstick.dev/network-request",
        "data": {"settings.json": base64.b64encode(json.dumps(SETTINGS).encode()).decode()},
    }
    for key, value in changes.items():
        if key.startswith("meta_"):
            doc["metadata"][key[5:]] = value
        else:
            doc[key] = value
    return doc


REF = NetworkRef(f"host-network-{REQUEST}", "secret-uid-1")


def read(doc: dict[str, Any] | None) -> RequestSettings | SecretProblem:
    return read_request_secret(doc, REF, request_id=REQUEST, node_uid=NODE)


def test_the_right_secret_gives_its_settings() -> None:
    result = read(secret())
    assert isinstance(result, RequestSettings)
    assert result.settings == SETTINGS and result.secret_uid == "secret-uid-1"


@pytest.mark.parametrize(("doc", "why"), [
    (None, "does not exist"),
    (secret(meta_uid="other"), "another UID"),
    (secret(meta_namespace="default"), "not the object the request names"),
    (secret(meta_deletionTimestamp="2026-12-01T10:01:00Z"), "being deleted"),
    (secret(immutable=False), "not immutable"),
    (secret(immutable=None), "not immutable"),
    (secret(type="Opaque"), "does not have the type"),
    (secret(meta_labels={"appliance.magicstick.dev/network-node": NODE}), "another request"),
    (secret(meta_labels={"appliance.magicstick.dev/request-id": REQUEST}), "another node"),
    (secret(data={}), "exactly one key"),
    (secret(data={"settings.json": "e30=", "extra": "e30="}), "exactly one key"),
    (secret(data={"settings.json": "e30"}), "not valid base64"),
    (secret(data={"settings.json": "e3 0="}), "not valid base64"),
    (secret(data={"settings.json": "e31="}), "not valid base64"),  # stray bits
    (secret(data={"settings.json": base64.b64encode(b"[1]").decode()}), "not a JSON object"),
    (secret(data={"settings.json": base64.b64encode(b'{"a":1,"a":2}').decode()}),
     "not one valid JSON"),
    (secret(data={"settings.json": base64.b64encode(b"x" * 9000).decode()}), "larger than"),
])
def test_anything_else_is_refused(doc: dict[str, Any] | None, why: str) -> None:
    result = read(doc)
    assert isinstance(result, SecretProblem) and why in result.message


def test_a_refusal_never_quotes_the_content() -> None:
    broken = base64.b64encode(b'{"password": "hunter2hunter2"').decode()
    result = read(secret(data={"settings.json": broken}))
    assert isinstance(result, SecretProblem) and "hunter2" not in result.message


def test_strict_base64() -> None:
    assert strict_base64("aGk=") == b"hi"
    for bad in ("aGk", "aG k=", "aGk=\n", "aGl=", 5, "é"):
        assert strict_base64(bad) is None


def test_network_ref() -> None:
    spec = {"networkRef": {"name": f"host-network-{REQUEST}", "uid": "u"}}
    assert network_ref(spec, REQUEST) == NetworkRef(f"host-network-{REQUEST}", "u")
    for bad in ({}, {"networkRef": {"name": "host-network-x", "uid": "u"}},
                {"networkRef": {"name": f"host-network-{REQUEST}", "uid": ""}},
                {"networkRef": {"name": f"host-network-{REQUEST}", "uid": "u", "x": 1}}):
        assert isinstance(network_ref(bad, REQUEST), SecretProblem)


def test_stale_request_secrets_of_this_node_only() -> None:
    now = datetime(2026, 12, 1, 10, 11, 0, tzinfo=UTC)
    old, fresh = "2026-12-01T10:00:30Z", "2026-12-01T10:05:00Z"
    other = "6f1c3b2a-0d4e-4b8a-9c7d-1e2f3a4b5c6d"
    secrets_ = [
        secret(meta_creationTimestamp=old),
        secret(meta_creationTimestamp=fresh, meta_uid="fresh"),
        secret(meta_creationTimestamp=old, meta_uid="other-node",
               meta_labels={"appliance.magicstick.dev/network-node": other}),
        secret(meta_creationTimestamp=old, meta_uid="opaque", type="Opaque"),
        secret(meta_creationTimestamp=old, meta_uid="badname", meta_name="host-network-x"),
    ]
    assert stale_request_secrets(secrets_, node_uid=NODE, now=now) == [
        (f"host-network-{REQUEST}", "secret-uid-1")]
    assert stale_request_secrets(secrets_, node_uid=NODE, now=now - timedelta(minutes=2)) == []


@given(
    last_boot=st.sampled_from(["b1", "b2", ""]),
    then=st.one_of(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), st.none(),
                   st.text(max_size=3), st.booleans()),
    now=st.floats(min_value=0, max_value=1e6, allow_nan=False),
)
def test_the_sweep_is_due_unless_the_last_look_is_of_this_boot_and_recent(
    last_boot: str, then: object, now: float
) -> None:
    last = {"bootId": last_boot, "boottime": then}
    due = sweep_due(last, boot_id="b1", boottime=now, interval_s=300.0)
    recent = (last_boot == "b1" and isinstance(then, float) and 0 <= now - then < 300.0)
    assert due is not recent
    assert sweep_due(None, boot_id="b1", boottime=now, interval_s=300.0)
    assert sweep_due(last, boot_id="", boottime=now, interval_s=300.0)
