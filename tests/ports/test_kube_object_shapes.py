"""An object read by GET is reasoned over only when it is well formed (ports/kube_answers.py).

The tick decides from an object's metadata: a HostOperation whose UID differs was "deleted and
replaced" (its status writes end), a Node whose UID differs was "recreated" (the operation
stops). A garbled answer (a hostile proxy, a broken server) must read as "cannot tell"
(KubeUnreadableError, exit 5), never as one of those.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from magicstick_host.errors import ExitCode, KubeUnreadableError
from magicstick_host.ports.kube_answers import checked_object, identity

NODE: dict[str, Any] = {
    "kind": "Node", "apiVersion": "v1",
    "metadata": {"name": "n1", "uid": "u-1", "resourceVersion": "7",
                 "labels": {"a": "b"}, "annotations": {"k": "v"}},
    "spec": {}, "status": {"nodeInfo": {"bootID": "b"}, "allocatable": {"cpu": "4"},
                           "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]},
}


def garbled(path: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(NODE)
    *parents, last = path.split(".")
    target = doc
    for key in parents:
        target = target[key]
    target[last] = value
    return doc


def test_a_well_formed_object_is_read_as_it_is() -> None:
    assert checked_object(copy.deepcopy(NODE), "GET n1") == NODE
    assert identity(copy.deepcopy(NODE), "GET n1") == ("u-1", "7")


@pytest.mark.parametrize(("path", "value"), [
    ("metadata", 5), ("metadata", []), ("metadata", "text"), ("metadata", None),
    ("metadata.uid", 7), ("metadata.uid", ""), ("metadata.uid", None),
    ("metadata.name", ["n1"]), ("metadata.resourceVersion", 7), ("metadata.namespace", 1),
    ("metadata.annotations", [1, 2]), ("metadata.labels", {"a": 1}),
    ("spec", "x"), ("status", [1]), ("status", True),
    ("status.nodeInfo", "x"), ("status.allocatable", [1]), ("status.addresses", {"a": 1}),
])
def test_a_garbled_object_is_cannot_tell(path: str, value: Any) -> None:
    with pytest.raises(KubeUnreadableError) as caught:
        checked_object(garbled(path, value), "GET /api/v1/nodes/n1")
    assert caught.value.exit_code == ExitCode.KUBE_UNAVAILABLE
    assert "/api/v1/nodes/n1" in str(caught.value)


def test_a_missing_status_or_spec_is_fine_but_a_missing_uid_is_not() -> None:
    doc = copy.deepcopy(NODE)
    del doc["status"], doc["spec"]
    assert checked_object(doc, "GET") is doc
    del doc["metadata"]["resourceVersion"]
    assert checked_object(doc, "GET") is doc
    with pytest.raises(KubeUnreadableError, match="resourceVersion"):
        identity(doc, "GET")  # a status patch needs it for its precondition
    del doc["metadata"]["uid"]
    with pytest.raises(KubeUnreadableError):
        checked_object(doc, "GET")
