"""The contract's cases, shared by two suites that run them against a real kube-apiserver:

- tests/contract (pytest, the suite's own test apiserver, objects in ai-system);
- tests/contract_live (`make contract-live CONTEXT=...`: an administrator's cluster, objects in a
  fresh namespace of its own, as server dry-run where possible).

A case is data (the tables below) and a check that takes `call`, one HTTP exchange as a given
identity, `call(method, path, body, content_type) -> (status, parsed body)`, and raises
AssertionError with a readable reason. Nothing here knows which cluster or user it talks to.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import yaml

from tests.contract.dashboard_objects import (
    ABSENT,
    GROUP,
    VERSION,
    dashboard_object,
    dashboard_spec,
    hexs,
    network_ref,
)

Call = Callable[[str, str, Any, str], tuple[int, Any]]
JSON = "application/json"
MERGE = "application/merge-patch+json"
REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "playbooks" / "files" / "manifests"
CRD_FILE = MANIFESTS / "magicstick-host-10-hostoperation-crd.yaml"
CRD_NAME = "hostoperations.appliance.magicstick.dev"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
DRY_RUN = ("dryRun", "All")


def hostops(namespace: str, name: str | None = None) -> str:
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/hostoperations"
    return path if name is None else f"{path}/{name}"


def with_query(path: str, *params: tuple[str, str]) -> str:
    return f"{path}?{urlencode(params)}" if params else path


def message_of(body: Any) -> str:
    return str(body.get("message", "")) if isinstance(body, dict) else str(body)


def expect(condition: bool, why: str) -> None:
    if not condition:
        raise AssertionError(why)


@functools.cache
def _parsed_crd() -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load(CRD_FILE.read_text())
    return crd


def shipped_crd() -> dict[str, Any]:
    """The shipped HostOperation CRD (a fresh copy: callers may change it)."""
    return copy.deepcopy(_parsed_crd())


def spec_rules() -> list[dict[str, str]]:
    """The cross-field rules on spec, as shipped."""
    (version,) = _parsed_crd()["spec"]["versions"]
    rules: list[dict[str, str]] = version["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "x-kubernetes-validations"]
    return rules


def rule_message(number: int) -> str:
    return spec_rules()[number - 1]["message"]


# -- the tables --------------------------------------------------------------------------------

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

NODE_NAMES_ADMITTED = ["a", "0", "box-01", "box-01.lan", "a.b.c", "a..b", "a-.b", "a.-b",
                       "0a-9", "a" * 253]
NODE_NAMES_REJECTED = ["", "-a", "a-", ".a", "a.", "A", "Box", "a_b", "a b", "a/b", "\u00e9",
                       "a" * 254, "a\n"]

# (action, field changes, what the message names)
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

REQUIRED_FIELDS = ["action", "nodeName", "nodeUid", "bootId", "requestId",
                   "acknowledgeDisruption", "allowExperimental", "experimentMode", "actorHash"]

# (action, merge-patch of spec): rule 1 refuses each, whoever sends it
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

# (status field, value): the schema refuses each
STATUS_REJECTED: list[tuple[str, str]] = [
    ("startedAt", "yesterday"),
    ("updatedAt", "2026-11-30 12:00:00"),
    ("confirmationDeadline", "2026-11-30T25:00:00Z"),
    ("requestId", "a" * 33),
    ("message", "m" * 2049),
    ("phase", "Pending"),
    ("bootId", "b" * 65),
]

# -- RBAC (contract.md, "Dashboard RBAC") ------------------------------------------------------

G = GROUP
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
# the dashboard's rights per (group, resource), in the namespace each Role lives in
DASHBOARD_HOSTOPERATIONS = {(G, "hostoperations"): frozenset({"get", "list", "create", "delete",
                                                              "patch"})}
DASHBOARD_SECRETS = {("", "secrets"): frozenset({"create", "get", "delete"})}
# (group, resource, subresource) the dashboard's rights are asked about, yes and no
DASHBOARD_PROBES: list[tuple[str, str, str]] = [
    (G, "hostoperations", ""),
    (G, "hostoperations", "status"),
    ("", "secrets", ""),
    ("", "pods", ""),
    ("", "pods", "exec"),
    (G, "moduleactivations", ""),
    (G, "appliances", ""),
]
CLUSTER_PROBES: list[tuple[str, str, str]] = [("", "nodes", ""), ("", "nodes", "status")]


def allowed_by(grants: Mapping[tuple[str, str], frozenset[str]], group: str, resource: str,
               subresource: str, verb: str) -> bool:
    """What a Role of these grants allows: never a subresource it does not name."""
    return not subresource and verb in grants.get((group, resource), frozenset())


def review(call: Call, verb: str, resource: str, group: str = "", subresource: str = "",
           namespace: str = "") -> bool:
    """SelfSubjectAccessReview as the caller: what the authorizer says, without side effects."""
    attrs: dict[str, Any] = {"verb": verb, "resource": resource, "group": group,
                             "namespace": namespace}
    if subresource:
        attrs["subresource"] = subresource
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attrs}}
    status, out = call("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body,
                       JSON)
    expect(status == 201, f"SelfSubjectAccessReview: HTTP {status}: {message_of(out)}")
    return bool(out["status"].get("allowed"))


def worker_access(namespace: str, credentials: str) -> list[tuple[str, str, str, str, str, bool]]:
    """(verb, resource, group, subresource, namespace, allowed) for the test worker's rights
    (tests/kubeserver/worker-rbac.yaml): HostOperations and their status in `namespace`, the
    network request Secrets in `credentials`; "" is every namespace or cluster-scoped."""
    return [
        # verb, resource, group, subresource, namespace, allowed
        ("get", "hostoperations", G, "", namespace, True),
        ("patch", "hostoperations", G, "status", namespace, True),
        ("create", "hostoperations", G, "", namespace, False),
        ("delete", "hostoperations", G, "", namespace, False),
        ("patch", "hostoperations", G, "", namespace, False),
        ("patch", "moduleactivations", G, "", namespace, True),
        ("create", "moduleactivations", G, "", namespace, True),
        ("patch", "nodes", "", "", "", True),
        ("get", "appliances", G, "", namespace, True),
        ("patch", "appliances", G, "status", namespace, False),
        ("list", "modelactivations", G, "", "", True),
        ("create", "modelactivations", G, "", namespace, False),
        ("list", "models", "kubeai.org", "", "", True),
        ("delete", "models", "kubeai.org", "", namespace, False),
        ("list", "pods", "", "", "", True),
        ("create", "pods", "", "", namespace, False),
        ("get", "secrets", "", "", credentials, True),
        ("list", "secrets", "", "", credentials, True),
        ("delete", "secrets", "", "", credentials, True),
        ("create", "secrets", "", "", credentials, False),
        ("update", "secrets", "", "", credentials, False),
        ("get", "secrets", "", "", namespace, False),
        ("list", "secrets", "", "", "", False),
    ]


def network_secret(name: str, namespace: str) -> dict[str, Any]:
    """A network request Secret as the dashboard creates it (network.md, "The request")."""
    import base64
    import json

    settings = base64.b64encode(json.dumps({"interface": "wlan0"}).encode()).decode()
    return {"apiVersion": "v1", "kind": "Secret", "immutable": True,
            "type": "appliance.magicstick.dev/network-request",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"appliance.magicstick.dev/request-id": name[-32:]}},
            "data": {"settings.json": settings}}


# -- the checks --------------------------------------------------------------------------------


def _create(call: Call, namespace: str, spec: dict[str, Any], *, dry_run: bool,
            strict: bool = False) -> tuple[int, Any]:
    params = ([DRY_RUN] if dry_run else []) + ([("fieldValidation", "Strict")] if strict else [])
    path = with_query(hostops(namespace), *params)
    return call("POST", path, dashboard_object(spec, namespace=namespace), JSON)


def admitted(call: Call, namespace: str, spec: dict[str, Any], *,
             dry_run: bool) -> dict[str, Any]:
    """The dashboard's object is admitted and stored exactly, nothing pruned or defaulted."""
    status, body = _create(call, namespace, spec, dry_run=dry_run, strict=True)
    expect(status == 201, f"not admitted: HTTP {status}: {message_of(body)}")
    expect(body["spec"] == spec, f"stored differently: {body['spec']!r} != {spec!r}")
    expect(not body.get("status"), f"a new request has a status: {body.get('status')!r}")
    return dict(body)


def rule_rejects(call: Call, namespace: str, rule: int, action: str, change: dict[str, Any],
                 *, dry_run: bool) -> None:
    """Rule `rule` (and no other) rejects this violation, with its own message."""
    status, body = _create(call, namespace, dashboard_spec(action, **change), dry_run=dry_run)
    text = message_of(body)
    expect(status == 422, f"expected 422 from rule {rule}, got HTTP {status}: {text}")
    expect(rule_message(rule) in text, f"rule {rule}'s message is missing from: {text}")
    others = [n for n in range(2, 13) if n != rule and rule_message(n) in text]
    expect(others == [], f"rules {others} also reject it: {text}")


def node_name_admitted(call: Call, namespace: str, name: str, *, dry_run: bool) -> None:
    status, body = _create(call, namespace, dashboard_spec("reboot", nodeName=name),
                           dry_run=dry_run, strict=True)
    expect(status == 201, f"nodeName {name!r} not admitted: HTTP {status}: {message_of(body)}")


def node_name_rejected(call: Call, namespace: str, name: str, *, dry_run: bool) -> None:
    status, body = _create(call, namespace, dashboard_spec("reboot", nodeName=name),
                           dry_run=dry_run)
    expect(status == 422, f"nodeName {name!r}: expected 422, got HTTP {status}")
    expect("nodeName" in message_of(body), f"message does not name nodeName: {message_of(body)}")


def field_rejected(call: Call, namespace: str, action: str, change: dict[str, Any],
                   expected: str, *, dry_run: bool) -> None:
    spec = dashboard_spec(action)
    spec.update(change)
    status, body = _create(call, namespace, spec, dry_run=dry_run)
    expect(status == 422, f"expected 422, got HTTP {status}: {message_of(body)}")
    expect(expected in message_of(body), f"{expected!r} not in: {message_of(body)}")


def required_field(call: Call, namespace: str, field: str, *, dry_run: bool) -> None:
    spec = dashboard_spec("reboot")
    del spec[field]
    status, body = _create(call, namespace, spec, dry_run=dry_run)
    expect(status == 422, f"without {field}: expected 422, got HTTP {status}")
    expect(field in message_of(body), f"{field!r} not in: {message_of(body)}")


def strict_unknown_field(call: Call, namespace: str, *, dry_run: bool) -> None:
    """kubectl (and a dashboard sending fieldValidation=Strict) gets a hard error."""
    status, body = _create(call, namespace, dashboard_spec("reboot", command="rm -rf /"),
                           dry_run=dry_run, strict=True)
    expect(status == 400, f"expected 400, got HTTP {status}: {message_of(body)}")
    expect('unknown field "spec.command"' in message_of(body), message_of(body))


def unknown_field_pruned(call: Call, namespace: str, *, dry_run: bool) -> dict[str, Any]:
    """Without fieldValidation the structural schema prunes it: the worker never sees it."""
    spec = dashboard_spec("reboot", command="rm -rf /", packages=["evil"])
    status, body = _create(call, namespace, spec, dry_run=dry_run)
    expect(status == 201, f"expected 201, got HTTP {status}: {message_of(body)}")
    expect("command" not in body["spec"] and "packages" not in body["spec"],
           f"unknown fields kept: {body['spec']!r}")
    return dict(body)


def immutable(call: Call, path: str, change: dict[str, Any], *, dry_run: bool) -> None:
    """Rule 1 refuses a spec change of the object at `path`."""
    target = with_query(path, DRY_RUN) if dry_run else path
    status, body = call("PATCH", target, {"spec": change}, MERGE)
    text = message_of(body)
    expect(status == 422, f"spec change: expected 422, got HTTP {status}: {text}")
    expect("immutable" in text and rule_message(1) in text, f"not rule 1's message: {text}")


def status_rejected(call: Call, status_path: str, field: str, value: str, *,
                    dry_run: bool) -> None:
    target = with_query(status_path, DRY_RUN) if dry_run else status_path
    status, body = call("PATCH", target, {"status": {field: value}}, MERGE)
    expect(status == 422, f"status {field}={value[:40]!r}: expected 422, got HTTP {status}")
    expect(field in message_of(body), f"{field!r} not in: {message_of(body)}")
