"""The HostOperation CRD as the real kube-apiserver enforces it (contract.md, "HostOperation").

The cases and their checks are shared with the live suite (tests/contract/cases.py,
tests/contract_live): here they run in ai-system of the suite's own test apiserver, for real.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.contract import cases
from tests.contract.cases import (
    CRD_PATH,
    IMMUTABLE,
    NODE_NAMES_ADMITTED,
    NODE_NAMES_REJECTED,
    REJECTED,
    REQUIRED_FIELDS,
    STATUS_REJECTED,
    VIOLATIONS,
    Call,
    spec_rules,
)
from tests.contract.dashboard_objects import (
    ACTIONS,
    dashboard_spec,
    dashboard_variants,
)
from tests.contract.helpers import (
    HOSTOPS,
    MERGE,
    NAMESPACE,
    fresh_name,
    hexs,
    hostop,
    message_of,
    valid_spec,
)
from tests.kubeserver.fixtures import KubeCluster

pytestmark = pytest.mark.apiserver


def as_user(kube: KubeCluster, user: str = "dashboard") -> Call:
    """One exchange as a test user, in the shape the shared checks take."""
    return lambda method, path, body, content_type: kube.request(method, path, body, user,
                                                                 content_type)


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
    cases.admitted(as_user(kube), NAMESPACE, spec, dry_run=False)


def test_every_rule_has_violations() -> None:
    assert {rule for rule, *_ in VIOLATIONS} == set(range(2, 13))  # rule 1: test_spec_is_immutable


@pytest.mark.parametrize(("rule", "action", "change"), [(r, a, c) for r, _, a, c in VIOLATIONS],
                         ids=[f"rule{r}-{i}" for r, i, _, _ in VIOLATIONS])
def test_each_rule_rejects_its_violation(
    kube: KubeCluster, rule: int, action: str, change: dict[str, Any]
) -> None:
    cases.rule_rejects(as_user(kube), NAMESPACE, rule, action, change, dry_run=False)


@pytest.mark.parametrize("name", NODE_NAMES_ADMITTED)
def test_node_name_pattern_admits(kube: KubeCluster, name: str) -> None:
    cases.node_name_admitted(as_user(kube), NAMESPACE, name, dry_run=False)


@pytest.mark.parametrize("name", NODE_NAMES_REJECTED, ids=repr)
def test_node_name_pattern_rejects(kube: KubeCluster, name: str) -> None:
    cases.node_name_rejected(as_user(kube), NAMESPACE, name, dry_run=False)


@pytest.mark.parametrize(("action", "change", "expected"), REJECTED,
                         ids=[f"{a}-{'-'.join(c)}" for a, c, _ in REJECTED])
def test_server_rejects_invalid_fields(
    kube: KubeCluster, action: str, change: dict[str, Any], expected: str
) -> None:
    cases.field_rejected(as_user(kube), NAMESPACE, action, change, expected, dry_run=False)


@pytest.mark.parametrize("field", REQUIRED_FIELDS)
def test_required_fields(kube: KubeCluster, field: str) -> None:
    cases.required_field(as_user(kube), NAMESPACE, field, dry_run=False)


def test_an_extra_field_is_rejected_under_strict_field_validation(kube: KubeCluster) -> None:
    """kubectl (and a dashboard sending fieldValidation=Strict) gets a hard error."""
    cases.strict_unknown_field(as_user(kube), NAMESPACE, dry_run=False)


def test_an_extra_field_is_never_stored_even_without_strict_validation(kube: KubeCluster) -> None:
    """Without fieldValidation the structural schema prunes it: the worker never sees it."""
    body = cases.unknown_field_pruned(as_user(kube), NAMESPACE, dry_run=False)
    _, stored = kube.request("GET", f"{HOSTOPS}/{body['metadata']['name']}", user="dashboard")
    assert "command" not in stored["spec"]


@pytest.mark.parametrize("user", ["admin", "dashboard"])
@pytest.mark.parametrize(("action", "change"), IMMUTABLE,
                         ids=[f"{a}-{'-'.join(c)}" for a, c in IMMUTABLE])
def test_spec_is_immutable(kube: KubeCluster, user: str, action: str,
                           change: dict[str, Any]) -> None:
    """Rule 1. Even the admin (who may write anything RBAC-wise) cannot change the spec."""
    status, created = create(kube, dashboard_spec(action))
    assert status == 201, message_of(created)
    path = f"{HOSTOPS}/{created['metadata']['name']}"
    cases.immutable(as_user(kube, user), path, change, dry_run=False)
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


@pytest.mark.parametrize(("field", "value"), STATUS_REJECTED)
def test_status_rejects_what_the_contract_excludes(kube: KubeCluster, field: str,
                                                   value: str) -> None:
    cases.status_rejected(as_user(kube, "worker"), status_path(kube, "reboot"), field, value,
                          dry_run=False)


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
