"""The HostOperation CRD as the real kube-apiserver enforces it (contract.md, "HostOperation")."""

from __future__ import annotations

from typing import Any

import pytest

from tests.contract.helpers import (
    HANDLED,
    HOSTOPS,
    MERGE,
    OTHERS,
    fresh_name,
    hostop,
    message_of,
    valid_spec,
)
from tests.kubeserver.fixtures import KubeCluster

pytestmark = pytest.mark.apiserver

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def create(kube: KubeCluster, spec: dict[str, Any], user: str = "dashboard",
           strict: bool = False) -> tuple[int, Any]:
    query = "?fieldValidation=Strict" if strict else ""
    return kube.request("POST", HOSTOPS + query, hostop(spec), user=user)


@pytest.mark.parametrize("name", ["hostoperations.appliance.magicstick.dev",
                                  "moduleactivations.appliance.magicstick.dev",
                                  "appliances.appliance.magicstick.dev",
                                  "modelactivations.appliance.magicstick.dev",
                                  "models.kubeai.org"])
def test_crds_are_established(kube: KubeCluster, name: str) -> None:
    status, crd = kube.request("GET", f"{CRD_PATH}/{name}")
    assert status == 200
    conds = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conds["Established"] == "True" and conds["NamesAccepted"] == "True"
    assert crd["spec"]["scope"] == "Namespaced"


def test_hostoperation_names_columns_and_status_subresource(kube: KubeCluster) -> None:
    _, crd = kube.request("GET", f"{CRD_PATH}/hostoperations.appliance.magicstick.dev")
    assert crd["spec"]["names"]["shortNames"] == ["mshostop"]
    assert crd["spec"]["names"]["kind"] == "HostOperation"
    (version,) = crd["spec"]["versions"]
    assert version["name"] == "v1alpha1" and version["subresources"] == {"status": {}}
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns[:3] == ["Node", "Action", "Phase"]


@pytest.mark.parametrize("action", HANDLED + OTHERS)
def test_dashboard_can_create_a_valid_request_of_each_action(
    kube: KubeCluster, action: str
) -> None:
    spec = valid_spec(action)
    status, body = create(kube, spec, strict=True)
    assert status == 201, message_of(body)
    assert body["spec"] == spec  # stored exactly, nothing pruned or defaulted
    assert "status" not in body or body["status"] == {}


def test_experiment_mode_request_is_valid_with_allow_experimental(kube: KubeCluster) -> None:
    spec = valid_spec("prepare-gpu", allowExperimental=True, experimentMode=True)
    status, body = create(kube, spec, strict=True)
    assert status == 201, message_of(body)


REJECTED: list[tuple[str, dict[str, Any], str]] = [
    ("reboot", {"requestId": "unsafe/id"}, "requestId"),
    ("reboot", {"requestId": "a" * 31}, "requestId"),
    ("reboot", {"requestId": "a" * 33}, "requestId"),
    ("reboot", {"requestId": "A" * 32}, "requestId"),
    ("reboot", {"action": "format-disk"}, "action"),
    ("reboot", {"acknowledgeDisruption": False}, "acknowledgeDisruption must be true"),
    ("prepare-gpu", {"experimentMode": True}, "experimentMode requires allowExperimental"),
    ("prepare-gpu", {"planId": ""}, "planId is required"),
    ("prepare-gpu", {"planId": "A" * 64}, "planId"),
    ("configure-gpu-memory", {"planId": ""}, "planId is required"),
    ("reboot", {"planId": "a" * 64}, "planId must be empty"),
    ("poweroff", {"planId": "a" * 64}, "planId must be empty"),
    ("reboot", {"allowExperimental": True}, "reboot and poweroff require"),
    ("poweroff", {"allowExperimental": True, "experimentMode": True}, "reboot and poweroff"),
    ("reboot", {"gpuMemory": {"carveoutIndex": 1, "dynamicLimitMi": 1024}}, "gpuMemory"),
    ("prepare-gpu", {"gpuMemory": {"carveoutIndex": 1, "dynamicLimitMi": 1024}}, "gpuMemory"),
    ("configure-gpu-memory", {"gpuMemory": {"carveoutIndex": True, "dynamicLimitMi": 1024}},
     "carveoutIndex"),
    ("configure-gpu-memory", {"gpuMemory": {"carveoutIndex": 1, "dynamicLimitMi": 0}},
     "dynamicLimitMi"),
    ("configure-gpu-memory", {"gpuMemory": {"carveoutIndex": 256, "dynamicLimitMi": 1024}},
     "carveoutIndex"),
    ("configure-gpu-memory", {"gpuMemory": {"carveoutIndex": 1, "dynamicLimitMi": 1048577}},
     "dynamicLimitMi"),
    ("configure-gpu-memory", {"allowExperimental": False}, "configure-gpu-memory requires"),
    ("configure-gpu-memory", {"experimentMode": True}, "configure-gpu-memory requires"),
    ("reboot", {"actorHash": "admin@example.test"}, "actorHash"),
    ("reboot", {"nodeName": "Not_A_DNS_Name"}, "nodeName"),
    ("reboot", {"nodeUid": ""}, "nodeUid"),
    ("reboot", {"bootId": "b" * 65}, "bootId"),
    ("reboot", {"networkRef": {"name": "host-network-" + "a" * 32, "uid": "u"}}, "networkRef"),
    ("configure-network", {"networkRef": {"name": "net-1", "uid": "u"}}, "networkRef"),
    ("check-updates", {"updateScope": "all"}, "updateScope"),
    ("install-updates", {"updateScope": "everything"}, "updateScope"),
    ("configure-updates", {"updatePolicy": {"mode": "all", "windowStart": "24:00",
                                            "windowMinutes": 60, "automaticReboot": True}},
     "windowStart"),
    ("configure-updates", {"updatePolicy": {"mode": "all", "windowStart": "23:59",
                                            "windowMinutes": 10, "automaticReboot": True}},
     "windowMinutes"),
    ("prepare-gpu", {"softwareChannel": {"kind": "branch", "value": "main"}}, "softwareChannel"),
    ("check-software-channel", {"softwarePreviewId": "a" * 64}, "softwarePreviewId"),
]


@pytest.mark.parametrize(("action", "change", "expected"), REJECTED,
                         ids=[f"{a}-{'-'.join(c)}" for a, c, _ in REJECTED])
def test_server_rejects_invalid_requests(
    kube: KubeCluster, action: str, change: dict[str, Any], expected: str
) -> None:
    spec = valid_spec(action)
    spec.update(change)
    status, body = create(kube, spec)
    assert status == 422, (status, message_of(body))
    assert expected in message_of(body)


@pytest.mark.parametrize("field", ["action", "nodeName", "nodeUid", "bootId", "requestId",
                                   "acknowledgeDisruption", "allowExperimental",
                                   "experimentMode", "actorHash"])
def test_required_fields(kube: KubeCluster, field: str) -> None:
    spec = valid_spec("reboot")
    del spec[field]
    status, body = create(kube, spec)
    assert status == 422, message_of(body)
    assert field in message_of(body)


def test_an_extra_field_is_rejected_under_strict_field_validation(kube: KubeCluster) -> None:
    """kubectl (and a dashboard sending fieldValidation=Strict) gets a hard error."""
    status, body = create(kube, valid_spec("reboot", command="rm -rf /"), strict=True)
    assert status == 400
    assert 'unknown field "spec.command"' in message_of(body)


def test_an_extra_field_is_never_stored_even_without_strict_validation(kube: KubeCluster) -> None:
    """Without fieldValidation the structural schema prunes it: the worker never sees it."""
    spec = valid_spec("reboot", command="rm -rf /", packages=["evil"])
    status, body = create(kube, spec)
    assert status == 201, message_of(body)
    assert "command" not in body["spec"] and "packages" not in body["spec"]
    _, stored = kube.request("GET", f"{HOSTOPS}/{body['metadata']['name']}", user="dashboard")
    assert "command" not in stored["spec"]


@pytest.mark.parametrize("change", [{"bootId": "another-boot"}, {"action": "poweroff"},
                                    {"requestId": "b" * 32}])
def test_spec_is_immutable(kube: KubeCluster, change: dict[str, Any]) -> None:
    status, created = create(kube, valid_spec("reboot"))
    assert status == 201
    path = f"{HOSTOPS}/{created['metadata']['name']}"
    # even the admin (who may write anything RBAC-wise) cannot change the spec
    status, body = kube.request("PATCH", path, {"spec": change}, user="admin", content_type=MERGE)
    assert status == 422, message_of(body)
    assert "immutable" in message_of(body)
    _, stored = kube.request("GET", path)
    assert stored["spec"] == created["spec"]


def test_a_terminal_request_is_replaced_by_delete_with_uid_precondition(kube: KubeCluster) -> None:
    name = fresh_name()
    status, first = kube.request("POST", HOSTOPS, hostop(valid_spec("reboot"), name),
                                 user="dashboard")
    assert status == 201
    path = f"{HOSTOPS}/{name}"
    wrong = {"apiVersion": "v1", "kind": "DeleteOptions",
             "preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}
    status, body = kube.request("DELETE", path, wrong, user="dashboard")
    assert status == 409, message_of(body)
    assert "precondition" in message_of(body).lower()
    right = {"apiVersion": "v1", "kind": "DeleteOptions",
             "preconditions": {"uid": first["metadata"]["uid"]}}
    status, body = kube.request("DELETE", path, right, user="dashboard")
    assert status == 200, message_of(body)
    assert kube.request("GET", path, user="dashboard")[0] == 404
    status, second = kube.request("POST", HOSTOPS, hostop(valid_spec("poweroff"), name),
                                  user="dashboard")
    assert status == 201 and second["metadata"]["uid"] != first["metadata"]["uid"]


def test_fixture_delete_helper_uses_the_uid_precondition(kube: KubeCluster) -> None:
    created = kube.create_hostoperation(fresh_name(), valid_spec("reboot"))
    with pytest.raises(AssertionError, match="409"):
        kube.delete_hostoperation(created["metadata"]["name"], "not-the-uid")
    kube.delete_hostoperation(created["metadata"]["name"], created["metadata"]["uid"])
