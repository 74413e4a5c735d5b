"""The HostOperation requests the dashboard creates, every action (contract.md, "HostOperation").

- `dashboard_spec(action, **overrides)`: a valid spec for `action`, fresh ids each call. An
  override replaces a field; `ABSENT` removes it (e.g. `planId=ABSENT`).
- `dashboard_object(spec, name=None)`: the whole object, in ai-system, with a fresh name unless
  given.
- `dashboard_variants()`: every shape the dashboard sends, for every action (normal and
  experimental prepare-gpu, power actions with an empty or no planId, each update mode and
  scope, each software channel kind, the bounds of every range), as (id, spec) pairs.

Every one of these satisfies the contract's CRD; tests/contract/test_hostoperation_crd.py proves
it against the real apiserver, so other tests can build on them.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any, Final

GROUP, VERSION, NAMESPACE = "appliance.magicstick.dev", "v1alpha1", "ai-system"

POWER: Final = ("reboot", "poweroff")
NETWORK: Final = ("configure-network", "scan-wifi")
UPDATES: Final = ("configure-updates", "check-updates", "install-updates")
SOFTWARE: Final = ("check-software-channel", "apply-software-channel")
# The worker's own actions, then the five it rejects ("not handled by this host worker").
WORKER_ACTIONS: Final = ("prepare-gpu", "configure-gpu-memory", *POWER, "clear-model-cache",
                         *NETWORK)
FOREIGN_ACTIONS: Final = (*UPDATES, *SOFTWARE)
ACTIONS: Final = (*WORKER_ACTIONS, *FOREIGN_ACTIONS)


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()


def hexs(n: int) -> str:
    """n lowercase hex characters (n even)."""
    return secrets.token_hex(n // 2)


def fresh_name(prefix: str = "host-") -> str:
    return prefix + hexs(24)


SECRET_UID: Final = "3b0f7d52-8a8e-4d0c-9c61-2f1a6b7c8d9e"


def network_ref(request_id: str, uid: str = SECRET_UID) -> dict[str, str]:
    """The Secret reference of a network request: named after the request (network.md)."""
    return {"name": "host-network-" + request_id, "uid": uid}


def dashboard_spec(action: str, **overrides: Any) -> dict[str, Any]:
    """A spec the dashboard could create for `action`; overrides replace (or, ABSENT, remove)."""
    if action not in ACTIONS:
        raise ValueError(f"not a HostOperation action: {action!r}")
    request_id = hexs(32)
    spec: dict[str, Any] = {
        "action": action,
        "nodeName": "box-" + hexs(6),
        "nodeUid": "3e1b7a9c-0d0e-4c1b-9a59-" + hexs(12),
        "bootId": "5a1c2b1e-1d6f-4a4e-8f0e-" + hexs(12),
        "requestId": request_id,
        "acknowledgeDisruption": True,
        "allowExperimental": False,
        "experimentMode": False,
        "actorHash": hashlib.sha256(b"admin@example.test").hexdigest(),
        "planId": hexs(64),
    }
    if action in POWER:
        spec["planId"] = ""
    elif action == "configure-gpu-memory":
        spec.update(allowExperimental=True,
                    gpuMemory={"carveoutIndex": 1, "dynamicLimitMi": 65536})
    elif action in NETWORK:
        spec["networkRef"] = network_ref(request_id)
    elif action == "configure-updates":
        spec["updatePolicy"] = {"mode": "security", "windowStart": "03:30",
                                "windowMinutes": 60, "automaticReboot": False}
    elif action == "install-updates":
        spec["updateScope"] = "security"
    elif action == "check-software-channel":
        spec["softwareChannel"] = {"kind": "branch", "value": "stable"}
    elif action == "apply-software-channel":
        spec["softwareChannel"] = {"kind": "tag", "value": "v2.3.1"}
        spec["softwarePreviewId"] = hexs(64)
    for key, value in overrides.items():
        if value is ABSENT:
            spec.pop(key, None)
        else:
            spec[key] = value
    return spec


def dashboard_object(spec: dict[str, Any], name: str | None = None,
                     namespace: str = NAMESPACE) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "HostOperation",
            "metadata": {"name": name or fresh_name(), "namespace": namespace}, "spec": spec}


def _policy(**kw: Any) -> dict[str, Any]:
    return {"mode": "security", "windowStart": "03:30", "windowMinutes": 60,
            "automaticReboot": False, **kw}


def dashboard_variants() -> list[tuple[str, dict[str, Any]]]:
    """(id, spec) for every shape of request the dashboard sends, all 12 actions included."""
    s = dashboard_spec
    out: list[tuple[str, dict[str, Any]]] = [(action, s(action)) for action in ACTIONS]
    out += [
        # the plan of an experimental profile, and the experiment-mode alternative
        ("prepare-gpu-experimental-plan", s("prepare-gpu", allowExperimental=True)),
        ("prepare-gpu-experiment-mode",
         s("prepare-gpu", allowExperimental=True, experimentMode=True)),
        ("reboot-without-planId", s("reboot", planId=ABSENT)),
        ("poweroff-without-planId", s("poweroff", planId=ABSENT)),
        ("gpu-memory-lowest", s("configure-gpu-memory",
                                gpuMemory={"carveoutIndex": 0, "dynamicLimitMi": 1})),
        ("gpu-memory-highest", s("configure-gpu-memory",
                                 gpuMemory={"carveoutIndex": 255, "dynamicLimitMi": 1048576})),
        ("network-ref-uid-64", s("configure-network",
                                 networkRef=network_ref(hexs(32), uid="u" * 64))),
        ("scan-wifi-ref-uid-1", s("scan-wifi", networkRef=network_ref(hexs(32), uid="u"))),
        ("updates-manual-midnight", s("configure-updates", updatePolicy=_policy(
            mode="manual", windowStart="00:00", windowMinutes=15))),
        ("updates-all-late", s("configure-updates", updatePolicy=_policy(
            mode="all", windowStart="23:59", windowMinutes=360, automaticReboot=True))),
        ("install-updates-all", s("install-updates", updateScope="all")),
        ("software-commit", s("check-software-channel",
                              softwareChannel={"kind": "commit", "value": hexs(40)})),
        ("software-branch-1-char", s("apply-software-channel",
                                     softwareChannel={"kind": "branch", "value": "x"})),
        ("software-tag-200-chars", s("apply-software-channel",
                                     softwareChannel={"kind": "tag", "value": "v" * 200})),
        ("node-name-one-char", s("reboot", nodeName="a")),
        ("node-name-253-chars", s("reboot", nodeName="a" * 253)),
        ("node-uid-64-boot-id-64", s("reboot", nodeUid="u" * 64, bootId="b" * 64)),
    ]
    return out
