"""The operations the soak asks for: one table entry each (`ACTIONS`), built from the published
report the way the dashboard builds requests (contract.md; tests/harness/dashboard.py holds its
checks).

The registry (magicstick_host/domain/operations/registry.py) is the source of what the worker
runs: an entry names a registered action, and the soak takes that operation's restart budget and
steps from its `OperationKind`. The entry adds only the administrator's side and the host's:
- `weight`: how often the soak's administrator picks it among the offered ones;
- `offered(report)`: when the dashboard offers it, from the report alone (`listed` when the
  report's `actions` is all the dashboard looks at);
- `spec(report, rng)`: the spec fields beyond the common ones;
- `effects`: which lines of the simulator's effects log (sim/effects_log.py) its steps leave, each
  mapped to the step it is the effect of (None: part of another effect, not counted);
- `prepare(cluster, namespace, spec)`: an optional hook run before the request is created, e.g.
  the request Secret a configure-network request refers to;
- `respond(host, operator, operation)`: an optional hook for what the cluster's other parts do
  for an active request of it between ticks (prepare-gpu: the device plugin and the operator).

Every registered operation must have an entry: `check_coverage` (run before every soak, and by
tests/soak/test_actions.py) names the ones missing. An effect that more than one step runs
(netplan apply: the trial's apply and its restore) maps to the tuple of those steps, and is
counted by its kind against the intents of all of them.

clear-model-cache, configure-network and scan-wifi need hosts that have model caches and a
network (tests/soak/runner.py picks such scenarios). The network requests' settings travel in a
request Secret: their `spec` returns them under `SETTINGS_KEY`, which `prepare` takes out of the
spec and puts into the Secret that the spec's `networkRef` then names (as the dashboard does;
tests/network/world.py).
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from magicstick_host.domain.network.operation import CONFIRMATION_ANNOTATION
from magicstick_host.domain.network.request import (
    NODE_LABEL,
    REQUEST_ID_LABEL,
    SECRET_NAMESPACE,
    SECRET_TYPE,
)
from magicstick_host.domain.operations.kind import OperationKind
from magicstick_host.domain.operations.registry import OPERATIONS
from magicstick_host.domain.state import Operation
from tests.harness.dashboard import (
    experiment_actionable,
    memory_selection_valid,
    plan_actionable,
    prepare_spec,
)

Json = dict[str, Any]
REPORT_FRESH_PAST = timedelta(seconds=180)
REPORT_FRESH_FUTURE = timedelta(seconds=30)


# None: part of another effect, not counted; a tuple: run by any of these steps
EffectStep = str | tuple[str, ...] | None
# the network settings a network request's `spec` hands to its `prepare` (never sent as spec)
SETTINGS_KEY = "_soakNetworkSettings"
# of the configure-network trials, the share the dashboard confirms (the rest roll back at the
# deadline, by the rollback timer): by the first byte of the requestId
CONFIRMED_SHARE = 224 / 256


Prepare = Callable[[Any, str, Json], None]  # (the test cluster, namespace, spec)
# (the SoakHost, the driver's Operator, the host's active Operation)
Respond = Callable[[Any, Any, Operation], None]


@dataclass(frozen=True)
class SoakAction:
    name: str  # an action of domain/operations/registry.py
    weight: float
    offered: Callable[[Json], bool]
    spec: Callable[[Json, random.Random], Json]
    effects: Mapping[str, EffectStep] = field(default_factory=dict)
    prepare: Prepare | None = None
    # what the cluster's other parts do for an active request of it, on the ticks the plan lets
    # them (`TickPlan.cluster_responds`), before the tick
    respond: Respond | None = None

    @property
    def kind(self) -> OperationKind:
        return OPERATIONS[self.name]

    @property
    def restart_budget(self) -> int:  # restarts one request may cause at most
        return self.kind.restart_budget

    @property
    def steps(self) -> frozenset[str]:  # the steps (effects) a request of it may run
        return self.kind.steps


def listed(action: str) -> Callable[[Json], bool]:
    """Offered when the report's `actions` lists it (the worker's own offer)."""
    return lambda report: action in (report.get("actions") or [])


def _always(report: Json) -> bool:
    return True


def _power_spec(report: Json, rng: random.Random) -> Json:
    return {}


def _prepare_offered(report: Json) -> bool:
    return plan_actionable(report) or experiment_actionable(report)


def _prepare(report: Json, rng: random.Random) -> Json:
    if plan_actionable(report) and (not experiment_actionable(report) or rng.random() < 0.5):
        return prepare_spec(report)
    return prepare_spec(report, experiment=True)


def _memory_choices(cap: Json) -> list[tuple[int, int]]:
    """Every selection the dashboard would accept, with limits on a coarse grid."""
    choices = []
    for option in cap.get("options") or []:
        projected = cap["systemMemoryMi"] + cap["currentCarveoutMi"] - option["sizeMi"]
        top = projected - cap["systemReserveMi"]
        for limit in range(cap["minDynamicLimitMi"], top + 1, 8 * cap["stepMi"]):
            if memory_selection_valid(cap, option["index"], limit):
                choices.append((option["index"], limit))
    return choices


def _memory_offered(report: Json) -> bool:
    cap = report.get("gpuMemory") or {}
    return cap.get("supported") is True and bool(_memory_choices(cap))


def _memory(report: Json, rng: random.Random) -> Json:
    cap = report["gpuMemory"]
    index, limit = rng.choice(_memory_choices(cap))
    return {
        "planId": cap["id"],
        "allowExperimental": True,
        "experimentMode": False,
        "gpuMemory": {"carveoutIndex": index, "dynamicLimitMi": limit},
    }


def _register_gpu(host: Any, operator: Any, op: Operation) -> None:
    """prepare-gpu waits in Registering/Validating for the device plugin (allocatable on the
    Node, once the kubelet reports the new boot) and the operator (Appliance `local`)."""
    if op.phase in ("Registering", "Validating") and not host.kubelet_behind:
        host.cluster.set_node_info(host.name, allocatable={"amd.com/gpu": "1"})
        operator.register(host.node_uid, host.boot_id)


def _model_cache_offered(report: Json) -> bool:
    section = report.get("modelCache")
    return listed("clear-model-cache")(report) and isinstance(section, dict) and bool(
        section.get("supported")) and not section.get("blocked") and bool(section.get("id"))


def _model_cache_spec(report: Json, rng: random.Random) -> Json:
    return {"planId": report["modelCache"]["id"]}


def _network(report: Json) -> Json:
    section = report.get("network")
    return section if isinstance(section, dict) and section.get("supported") is True else {}


def _wifi_interfaces(report: Json) -> list[Json]:
    return [i for i in _network(report).get("interfaces") or []
            if i.get("kind") == "wifi" and i.get("scanSupported") is True]


def _scan_offered(report: Json) -> bool:
    return listed("scan-wifi")(report) and bool(_wifi_interfaces(report))


def _scan_spec(report: Json, rng: random.Random) -> Json:
    interface = rng.choice(_wifi_interfaces(report))["name"]
    return {"planId": _network(report)["id"], SETTINGS_KEY: {"interface": interface}}


def _static_keeping(interface: Json) -> Json | None:
    """Settings that keep the host reachable: the interface static on the address it has now
    (its cluster address, when it carries it), with its gateway, DNS and metric."""
    address = interface.get("configuredAddress") or next(
        (a for a in interface.get("addresses") or [] if "." in a), None)
    gateway = interface.get("configuredGateway") or interface.get("gateway")
    if not address or "/" not in address or not gateway:
        return None
    return {"interface": interface["name"], "mode": "static", "address": address,
            "gateway": gateway, "dns": list(interface.get("dns") or [gateway])[:3],
            "metric": interface.get("metric") if isinstance(interface.get("metric"), int)
            else 100}


def _network_changes(report: Json) -> list[Json]:
    return [settings for i in _network(report).get("interfaces") or []
            if i.get("kind") == "ethernet" and i.get("editable") is True
            and (settings := _static_keeping(i)) is not None]


def _network_offered(report: Json) -> bool:
    return listed("configure-network")(report) and bool(_network_changes(report))


def _network_spec(report: Json, rng: random.Random) -> Json:
    return {"planId": _network(report)["id"],
            SETTINGS_KEY: rng.choice(_network_changes(report))}


def _request_secret(cluster: Any, namespace: str, spec: Json) -> None:
    """The dashboard's request Secret (immutable, typed, labelled for the request and the
    node), then the `networkRef` that names it."""
    settings = spec.pop(SETTINGS_KEY)
    request_id = spec["requestId"]
    body = {
        "apiVersion": "v1", "kind": "Secret", "immutable": True, "type": SECRET_TYPE,
        "metadata": {"name": f"host-network-{request_id}", "namespace": SECRET_NAMESPACE,
                     "labels": {REQUEST_ID_LABEL: request_id, NODE_LABEL: spec["nodeUid"]}},
        "data": {"settings.json": base64.b64encode(json.dumps(settings).encode()).decode()},
    }
    code, out = cluster.request("POST", f"/api/v1/namespaces/{SECRET_NAMESPACE}/secrets", body,
                                user="dashboard")
    if code != 201 or not isinstance(out, dict):
        raise AssertionError(f"creating the request Secret: HTTP {code}: {out!r:.300}")
    spec["networkRef"] = {"name": out["metadata"]["name"], "uid": out["metadata"]["uid"]}


def _confirm(host: Any, operator: Any, op: Operation) -> None:
    """The administrator confirms a trial that kept the host reachable (most of them)."""
    if op.phase != "AwaitingConfirmation" or int(op.request_id[:2], 16) >= CONFIRMED_SHARE * 256:
        return
    code, out = host.cluster.request(
        "PATCH", host.cluster.hostoperations_path(host.request_name),
        {"metadata": {"annotations": {CONFIRMATION_ANNOTATION: op.request_id}}},
        user="dashboard", content_type="application/merge-patch+json")
    if code not in (200, 404):
        raise AssertionError(f"confirming {op.request_id}: HTTP {code}: {out!r:.300}")


# the network trial's steps (network/trial_steps.py): write generates; apply stops a stale
# timer, arms the rollback timer and applies; keep stops the timer; restore generates, applies
# and stops the timer
NETWORK_EFFECTS: Mapping[str, EffectStep] = {
    "netplan-generate": ("write-network-config", "restore-network-config"),
    "timer-armed": "apply-network-config",
    "netplan-apply": ("apply-network-config", "restore-network-config"),
    "timer-stopped": ("apply-network-config", "keep-network-config", "restore-network-config"),
}

SHUTDOWN_EFFECTS: Mapping[str, EffectStep] = {
    "shutdown": "schedule-shutdown", "shutdown-failed": "schedule-shutdown",
}

ACTIONS: tuple[SoakAction, ...] = (
    SoakAction("reboot", 1.0, _always, _power_spec, SHUTDOWN_EFFECTS),
    SoakAction("poweroff", 0.5, _always, _power_spec, SHUTDOWN_EFFECTS),
    SoakAction("prepare-gpu", 1.5, _prepare_offered, _prepare, {
        **SHUTDOWN_EFFECTS, "playbook:prepare.yml": "install-packages",
        "gpu-publish": "refresh-gpu-evidence",
    }, respond=_register_gpu),
    SoakAction("configure-gpu-memory", 1.5, _memory_offered, _memory, {
        **SHUTDOWN_EFFECTS, "playbook:memory.yml": "write-ttm-config",
        "initramfs": None,  # run by the memory playbook, counted with it
        # seen by the observer in sysfs (tests/soak/observe.py), not in the effects log
        "carveout-write": "write-carveout",
    }),
    # seen by the observer in the cache roots and the hub's shared store
    # (tests/soak/observe.py); an entry or store payload the cleanup may not delete
    # ("cache-entry-removed-not-clearable", "shared-blob-removed-not-clearable") maps to no
    # step: a violation
    SoakAction("clear-model-cache", 1.0, _model_cache_offered, _model_cache_spec,
               {"cache-entry-removed": "delete-cache-entry",
                "shared-blobs-swept": "sweep-shared-blobs"}),
    # weighted up: only the network host offers it, and its trial is the longest path
    SoakAction("configure-network", 3.0, _network_offered, _network_spec, NETWORK_EFFECTS,
               prepare=_request_secret, respond=_confirm),
    SoakAction("scan-wifi", 1.0, _scan_offered, _scan_spec, {"wifi-scan": "scan-wifi"},
               prepare=_request_secret),
)
BY_NAME = {a.name: a for a in ACTIONS}
# not the worker's: a one-shot simulator fault the soak armed fired
FOREIGN_EFFECTS: Mapping[str, EffectStep] = {"fault": None}


def check_coverage(actions: tuple[SoakAction, ...] = ACTIONS) -> list[str]:
    """What keeps the table from soaking every registered operation as the registry has it."""
    names = [a.name for a in actions]
    problems = [f"{name}: registered, but tests/soak/actions.py has no entry for it"
                for name in OPERATIONS if name not in names]
    problems += [f"{name}: an entry, but the registry does not run it" for name in names
                 if name not in OPERATIONS]
    problems += [f"{name}: more than one entry" for name in set(names) if names.count(name) > 1]
    for action in actions:
        if action.name in OPERATIONS:
            problems += [f"{action.name}: effect {effect!r} maps to {step!r}, not a step of it"
                         for effect, steps in action.effects.items()
                         for step in ((steps,) if isinstance(steps, str) else steps or ())
                         if step not in action.steps]
    return problems


def effect_steps(actions: tuple[SoakAction, ...] = ACTIONS) -> dict[str, EffectStep]:
    """Each kind of effect on the host -> the step(s) it is the effect of (over all actions)."""
    out: dict[str, EffectStep] = dict(FOREIGN_EFFECTS)
    for action in actions:
        for effect, step in action.effects.items():
            if out.setdefault(effect, step) != step:
                raise ValueError(f"effect {effect!r} is the effect of {out[effect]!r} and of "
                                 f"{step!r} ({action.name})")
    return out


def report_fresh(report: Json, node: Json, now: datetime | None = None) -> bool:
    """The dashboard's freshness rules for the host report (contract.md, "The host report")."""
    now = now or datetime.now(UTC)
    info = (node.get("status") or {}).get("nodeInfo") or {}
    try:
        observed = datetime.fromisoformat(str(report["observedAt"]).replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return False
    return (
        report.get("schemaVersion") == 1
        and now - REPORT_FRESH_PAST <= observed <= now + REPORT_FRESH_FUTURE
        and report.get("nodeUid") == node["metadata"]["uid"]
        and report.get("bootId") == info.get("bootID")
        and report.get("kernel") == info.get("kernelVersion")
    )


def choose(report: Json, rng: random.Random) -> tuple[SoakAction, Json] | None:
    """What the administrator asks for now: an offered action and its spec fields."""
    offered = [a for a in ACTIONS if a.offered(report)]
    if not offered:
        return None
    action = rng.choices(offered, weights=[a.weight for a in offered])[0]
    return action, action.spec(report, rng)
