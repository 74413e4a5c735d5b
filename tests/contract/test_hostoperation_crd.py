"""The HostOperation CRD as the real kube-apiserver enforces it (contract.md, "HostOperation")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.contract.dashboard_objects import (
    ABSENT,
    ACTIONS,
    dashboard_spec,
    dashboard_variants,
    network_ref,
)
from tests.contract.helpers import (
    HOSTOPS,
    MERGE,
    fresh_name,
    hexs,
    hostop,
    message_of,
    valid_spec,
)
from tests.kubeserver.fixtures import KubeCluster

pytestmark = pytest.mark.apiserver

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CRD_FILE = (Path(__file__).resolve().parents[2] / "playbooks" / "files" / "manifests"
            / "magicstick-host-10-hostoperation-crd.yaml")


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


# -- both directions: every dashboard object is admitted, every rule rejects its violation -----


def spec_rules() -> list[dict[str, str]]:
    """The cross-field rules on spec, as shipped."""
    crd = yaml.safe_load(CRD_FILE.read_text())
    (version,) = crd["spec"]["versions"]
    rules: list[dict[str, str]] = version["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "x-kubernetes-validations"]
    return rules


def rule_message(number: int) -> str:
    return spec_rules()[number - 1]["message"]


def test_the_spec_has_exactly_the_twelve_rules_of_the_contract(kube: KubeCluster) -> None:
    rules = spec_rules()
    assert len(rules) == 12
    assert rules[0]["rule"] == "self == oldSelf" and "immutable" in rules[0]["message"]
    messages = [r["message"] for r in rules]
    # each violation below is recognised by its rule's message alone
    assert not [(a, b) for a in messages for b in messages if a != b and a in b]
    _, served = kube.request("GET", f"{CRD_PATH}/hostoperations.appliance.magicstick.dev")
    (version,) = served["spec"]["versions"]
    served_spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert [r["rule"] for r in served_spec["x-kubernetes-validations"]] == [
        r["rule"] for r in rules]
    node_name = served_spec["properties"]["nodeName"]
    assert (node_name["pattern"], node_name["minLength"], node_name["maxLength"]) == (
        "^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$", 1, 253)


def test_the_variants_cover_every_action() -> None:
    assert {spec["action"] for _, spec in dashboard_variants()} == set(ACTIONS)
    assert len(ACTIONS) == 12


@pytest.mark.parametrize(("variant", "spec"), dashboard_variants(),
                         ids=[v for v, _ in dashboard_variants()])
def test_every_dashboard_object_is_admitted(
    kube: KubeCluster, variant: str, spec: dict[str, Any]
) -> None:
    status, body = create(kube, spec, strict=True)
    assert status == 201, (variant, message_of(body))
    assert body["spec"] == spec  # stored exactly, nothing pruned or defaulted
    assert "status" not in body or body["status"] == {}


# (rule, id, action, overrides): each violates its rule and no other
VIOLATIONS: list[tuple[int, str, str, dict[str, Any]]] = [
    (2, "prepare-gpu-empty-planId", "prepare-gpu", {"planId": ""}),
    (2, "prepare-gpu-no-planId", "prepare-gpu", {"planId": ABSENT}),
    (2, "gpu-memory-empty-planId", "configure-gpu-memory", {"planId": ""}),
    (2, "gpu-memory-no-planId", "configure-gpu-memory", {"planId": ABSENT}),
    (3, "prepare-gpu-experiment-without-allow", "prepare-gpu", {"experimentMode": True}),
    (4, "reboot-with-planId", "reboot", {"planId": "a" * 64}),
    (4, "poweroff-with-planId", "poweroff", {"planId": "a" * 64}),
    (4, "reboot-allow-experimental", "reboot", {"allowExperimental": True}),
    (4, "poweroff-experiment-mode", "poweroff", {"allowExperimental": True,
                                                 "experimentMode": True}),
    (5, "gpu-memory-without-gpuMemory", "configure-gpu-memory", {"gpuMemory": ABSENT}),
    (5, "gpu-memory-not-experimental", "configure-gpu-memory", {"allowExperimental": False}),
    (5, "gpu-memory-experiment-mode", "configure-gpu-memory", {"experimentMode": True}),
    (5, "prepare-gpu-with-gpuMemory", "prepare-gpu",
     {"gpuMemory": {"carveoutIndex": 1, "dynamicLimitMi": 1024}}),
    (5, "reboot-with-gpuMemory", "reboot",
     {"gpuMemory": {"carveoutIndex": 1, "dynamicLimitMi": 1024}}),
    (5, "scan-wifi-with-gpuMemory", "scan-wifi",
     {"gpuMemory": {"carveoutIndex": 1, "dynamicLimitMi": 1024}}),
    (6, "configure-network-without-networkRef", "configure-network", {"networkRef": ABSENT}),
    (6, "scan-wifi-without-networkRef", "scan-wifi", {"networkRef": ABSENT}),
    (6, "configure-network-empty-planId", "configure-network", {"planId": ""}),
    (6, "scan-wifi-no-planId", "scan-wifi", {"planId": ABSENT}),
    (6, "configure-network-allow-experimental", "configure-network",
     {"allowExperimental": True}),
    (6, "scan-wifi-experiment-mode", "scan-wifi",
     {"allowExperimental": True, "experimentMode": True}),
    (6, "reboot-with-networkRef", "reboot", {"networkRef": network_ref(hexs(32))}),
    (6, "prepare-gpu-with-networkRef", "prepare-gpu", {"networkRef": network_ref(hexs(32))}),
    (6, "clear-model-cache-with-networkRef", "clear-model-cache",
     {"networkRef": network_ref(hexs(32))}),
    (7, "check-updates-empty-planId", "check-updates", {"planId": ""}),
    (7, "configure-updates-no-planId", "configure-updates", {"planId": ABSENT}),
    (7, "install-updates-allow-experimental", "install-updates", {"allowExperimental": True}),
    (7, "check-updates-experiment-mode", "check-updates",
     {"allowExperimental": True, "experimentMode": True}),
    (8, "configure-updates-without-policy", "configure-updates", {"updatePolicy": ABSENT}),
    (8, "check-updates-with-policy", "check-updates",
     {"updatePolicy": {"mode": "all", "windowStart": "01:00", "windowMinutes": 60,
                       "automaticReboot": True}}),
    (8, "reboot-with-policy", "reboot",
     {"updatePolicy": {"mode": "manual", "windowStart": "01:00", "windowMinutes": 60,
                       "automaticReboot": False}}),
    (9, "install-updates-without-scope", "install-updates", {"updateScope": ABSENT}),
    (9, "check-updates-with-scope", "check-updates", {"updateScope": "all"}),
    (9, "poweroff-with-scope", "poweroff", {"updateScope": "security"}),
    (10, "clear-model-cache-empty-planId", "clear-model-cache", {"planId": ""}),
    (10, "clear-model-cache-no-planId", "clear-model-cache", {"planId": ABSENT}),
    (10, "clear-model-cache-allow-experimental", "clear-model-cache",
     {"allowExperimental": True}),
    (10, "clear-model-cache-experiment-mode", "clear-model-cache",
     {"allowExperimental": True, "experimentMode": True}),
    (11, "check-software-without-channel", "check-software-channel",
     {"softwareChannel": ABSENT}),
    (11, "apply-software-without-channel", "apply-software-channel",
     {"softwareChannel": ABSENT}),
    (11, "check-software-empty-planId", "check-software-channel", {"planId": ""}),
    (11, "apply-software-allow-experimental", "apply-software-channel",
     {"allowExperimental": True}),
    (11, "check-software-experiment-mode", "check-software-channel",
     {"allowExperimental": True, "experimentMode": True}),
    (11, "prepare-gpu-with-channel", "prepare-gpu",
     {"softwareChannel": {"kind": "branch", "value": "main"}}),
    (11, "check-updates-with-channel", "check-updates",
     {"softwareChannel": {"kind": "branch", "value": "main"}}),
    (12, "apply-software-without-preview", "apply-software-channel",
     {"softwarePreviewId": ABSENT}),
    (12, "check-software-with-preview", "check-software-channel",
     {"softwarePreviewId": "a" * 64}),
    (12, "reboot-with-preview", "reboot", {"softwarePreviewId": "a" * 64}),
]


def test_every_rule_has_violations() -> None:
    assert {rule for rule, *_ in VIOLATIONS} == set(range(2, 13))  # rule 1: test_spec_is_immutable


@pytest.mark.parametrize(("rule", "action", "change"), [(r, a, c) for r, _, a, c in VIOLATIONS],
                         ids=[f"rule{r}-{i}" for r, i, _, _ in VIOLATIONS])
def test_each_rule_rejects_its_violation(
    kube: KubeCluster, rule: int, action: str, change: dict[str, Any]
) -> None:
    status, body = create(kube, dashboard_spec(action, **change))
    assert status == 422, (status, message_of(body))
    text = message_of(body)
    assert rule_message(rule) in text
    others = [n for n in range(2, 13) if n != rule and rule_message(n) in text]
    assert others == [], text


NODE_NAMES_ADMITTED = ["a", "0", "box-01", "box-01.lan", "a.b.c", "a..b", "a-.b", "a.-b",
                       "0a-9", "a" * 253]
NODE_NAMES_REJECTED = ["", "-a", "a-", ".a", "a.", "A", "Box", "a_b", "a b", "a/b", "\u00e9",
                       "a" * 254, "a\n"]


@pytest.mark.parametrize("name", NODE_NAMES_ADMITTED)
def test_node_name_pattern_admits(kube: KubeCluster, name: str) -> None:
    status, body = create(kube, dashboard_spec("reboot", nodeName=name), strict=True)
    assert status == 201, message_of(body)


@pytest.mark.parametrize("name", NODE_NAMES_REJECTED, ids=repr)
def test_node_name_pattern_rejects(kube: KubeCluster, name: str) -> None:
    status, body = create(kube, dashboard_spec("reboot", nodeName=name))
    assert status == 422, message_of(body)
    assert "nodeName" in message_of(body)


REJECTED: list[tuple[str, dict[str, Any], str]] = [
    ("reboot", {"requestId": "unsafe/id"}, "requestId"),
    ("reboot", {"requestId": "a" * 31}, "requestId"),
    ("reboot", {"requestId": "a" * 33}, "requestId"),
    ("reboot", {"requestId": "A" * 32}, "requestId"),
    ("reboot", {"action": "format-disk"}, "action"),
    ("reboot", {"acknowledgeDisruption": False}, "acknowledgeDisruption must be true"),
    ("prepare-gpu", {"planId": "A" * 64}, "planId"),
    ("configure-gpu-memory", {"gpuMemory": {"carveoutIndex": True, "dynamicLimitMi": 1024}},
     "carveoutIndex"),
    ("configure-gpu-memory", {"gpuMemory": {"carveoutIndex": 1, "dynamicLimitMi": 0}},
     "dynamicLimitMi"),
    ("configure-gpu-memory", {"gpuMemory": {"carveoutIndex": 256, "dynamicLimitMi": 1024}},
     "carveoutIndex"),
    ("configure-gpu-memory", {"gpuMemory": {"carveoutIndex": 1, "dynamicLimitMi": 1048577}},
     "dynamicLimitMi"),
    ("reboot", {"actorHash": "admin@example.test"}, "actorHash"),
    ("reboot", {"nodeUid": ""}, "nodeUid"),
    ("reboot", {"bootId": "b" * 65}, "bootId"),
    ("configure-network", {"networkRef": {"name": "net-1", "uid": "u"}}, "networkRef"),
    ("install-updates", {"updateScope": "everything"}, "updateScope"),
    ("configure-updates", {"updatePolicy": {"mode": "all", "windowStart": "24:00",
                                            "windowMinutes": 60, "automaticReboot": True}},
     "windowStart"),
    ("configure-updates", {"updatePolicy": {"mode": "all", "windowStart": "23:59",
                                            "windowMinutes": 10, "automaticReboot": True}},
     "windowMinutes"),
    ("configure-updates", {"updatePolicy": {"mode": "all", "windowStart": "23:59",
                                            "windowMinutes": 361, "automaticReboot": True}},
     "windowMinutes"),
    ("configure-updates", {"updatePolicy": {"mode": "nightly", "windowStart": "01:00",
                                            "windowMinutes": 60, "automaticReboot": True}},
     "mode"),
    ("configure-updates", {"updatePolicy": {"mode": "all", "windowStart": "1:00",
                                            "windowMinutes": 60, "automaticReboot": True}},
     "windowStart"),
    ("prepare-gpu", {"planId": "a" * 63}, "planId"),
    ("reboot", {"bootId": ""}, "bootId"),
    ("reboot", {"nodeUid": "u" * 65}, "nodeUid"),
    ("reboot", {"actorHash": "A" * 64}, "actorHash"),
    ("scan-wifi", {"networkRef": {"name": "host-network-" + "A" * 32, "uid": "u"}},
     "networkRef"),
    ("scan-wifi", {"networkRef": {"name": "host-network-" + "a" * 33, "uid": "u"}},
     "networkRef"),
    ("configure-network", {"networkRef": {"name": "host-network-" + "a" * 32, "uid": ""}},
     "networkRef"),
    ("configure-network", {"networkRef": {"name": "host-network-" + "a" * 32, "uid": "u" * 65}},
     "networkRef"),
    ("check-software-channel", {"softwareChannel": {"kind": "sha", "value": "x"}},
     "softwareChannel"),
    ("check-software-channel", {"softwareChannel": {"kind": "tag", "value": ""}},
     "softwareChannel"),
    ("apply-software-channel", {"softwareChannel": {"kind": "tag", "value": "v" * 201}},
     "softwareChannel"),
    ("apply-software-channel", {"softwarePreviewId": "a" * 63}, "softwarePreviewId"),
]


@pytest.mark.parametrize(("action", "change", "expected"), REJECTED,
                         ids=[f"{a}-{'-'.join(c)}" for a, c, _ in REJECTED])
def test_server_rejects_invalid_fields(
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


IMMUTABLE: list[tuple[str, dict[str, Any]]] = [
    ("reboot", {"bootId": "another-boot"}),
    ("reboot", {"action": "poweroff"}),
    ("reboot", {"requestId": "b" * 32}),
    ("reboot", {"planId": None}),  # merge patch null: remove the field
    ("prepare-gpu", {"experimentMode": True, "allowExperimental": True}),
    ("configure-gpu-memory", {"gpuMemory": {"dynamicLimitMi": 2048}}),
    ("configure-network", {"networkRef": {"uid": "another-secret"}}),
    ("scan-wifi", {"planId": "c" * 64}),
    ("clear-model-cache", {"actorHash": "e" * 64}),
    ("configure-updates", {"updatePolicy": {"windowMinutes": 120}}),
    ("apply-software-channel", {"softwarePreviewId": "d" * 64}),
]


@pytest.mark.parametrize("user", ["admin", "dashboard"])
@pytest.mark.parametrize(("action", "change"), IMMUTABLE,
                         ids=[f"{a}-{'-'.join(c)}" for a, c in IMMUTABLE])
def test_spec_is_immutable(kube: KubeCluster, user: str, action: str,
                           change: dict[str, Any]) -> None:
    """Rule 1. Even the admin (who may write anything RBAC-wise) cannot change the spec."""
    status, created = create(kube, dashboard_spec(action))
    assert status == 201, message_of(created)
    path = f"{HOSTOPS}/{created['metadata']['name']}"
    status, body = kube.request("PATCH", path, {"spec": change}, user=user, content_type=MERGE)
    assert status == 422, message_of(body)
    assert "immutable" in message_of(body)
    assert rule_message(1) in message_of(body)
    _, stored = kube.request("GET", path)
    assert stored["spec"] == created["spec"]


def test_metadata_stays_writable_for_the_network_confirmation(kube: KubeCluster) -> None:
    """The dashboard confirms a network trial with an annotation: rule 1 lets that through."""
    status, created = create(kube, dashboard_spec("configure-network"))
    assert status == 201
    path = f"{HOSTOPS}/{created['metadata']['name']}"
    patch = {"metadata": {"annotations": {"appliance.magicstick.dev/confirm": "1"}}}
    status, body = kube.request("PATCH", path, patch, user="dashboard", content_type=MERGE)
    assert status == 200, message_of(body)
    assert body["metadata"]["annotations"] == {"appliance.magicstick.dev/confirm": "1"}
    assert body["spec"] == created["spec"]


# -- status: written by the worker through the subresource ---------------------------------------


def status_path(kube: KubeCluster, action: str = "configure-network") -> str:
    status, created = create(kube, dashboard_spec(action))
    assert status == 201
    return f"{HOSTOPS}/{created['metadata']['name']}/status"


def test_status_takes_the_contract_fields_and_keeps_the_worker_extras(kube: KubeCluster) -> None:
    path = status_path(kube)
    status = {"phase": "AwaitingConfirmation", "message": "m" * 2048, "requestId": hexs(32),
              "startedAt": "2026-11-30T12:00:00Z", "updatedAt": "2026-11-30T12:00:01.5+01:00",
              "bootId": "5a1c2b1e-1d6f-4a4e-8f0e-" + hexs(12),
              "confirmationDeadline": "2026-11-30T12:03:00Z",
              "rebootsUsed": 1, "rebootBudget": 2, "outcome": "uncertain",
              "history": [{"phase": "Applying", "at": "2026-11-30T12:00:00Z"}]}
    code, body = kube.request("PATCH", path, {"status": status}, user="worker",
                              content_type=MERGE)
    assert code == 200, message_of(body)
    assert body["status"] == status


@pytest.mark.parametrize(("field", "value"), [
    ("startedAt", "yesterday"),
    ("updatedAt", "2026-11-30 12:00:00"),
    ("confirmationDeadline", "2026-11-30T25:00:00Z"),
    ("requestId", "a" * 33),
    ("message", "m" * 2049),
    ("phase", "Pending"),
    ("bootId", "b" * 65),
])
def test_status_rejects_what_the_contract_excludes(kube: KubeCluster, field: str,
                                                   value: str) -> None:
    code, body = kube.request("PATCH", status_path(kube, "reboot"), {"status": {field: value}},
                              user="worker", content_type=MERGE)
    assert code == 422, message_of(body)
    assert field in message_of(body)


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
