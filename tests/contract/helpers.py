"""Shared builders for the contract tests (real apiserver; fresh names per test)."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

GROUP, VERSION, NAMESPACE = "appliance.magicstick.dev", "v1alpha1", "ai-system"
HOSTOPS = f"/apis/{GROUP}/{VERSION}/namespaces/{NAMESPACE}/hostoperations"
MODACTS = f"/apis/{GROUP}/{VERSION}/namespaces/{NAMESPACE}/moduleactivations"
MERGE = "application/merge-patch+json"

HANDLED = ("prepare-gpu", "configure-gpu-memory", "reboot", "poweroff")
OTHERS = ("clear-model-cache", "configure-network", "scan-wifi", "configure-updates",
          "check-updates", "install-updates", "check-software-channel", "apply-software-channel")


def hexs(n: int) -> str:
    return secrets.token_hex(n // 2)


def fresh_name(prefix: str = "host-") -> str:
    return prefix + hexs(24)


def valid_spec(action: str, **overrides: Any) -> dict[str, Any]:
    """A spec the dashboard could create for `action` (contract.md)."""
    spec: dict[str, Any] = {
        "action": action,
        "nodeName": "box-" + hexs(6),
        "nodeUid": "3e1b7a9c-0d0e-4c1b-9a59-" + hexs(12),
        "bootId": "5a1c2b1e-1d6f-4a4e-8f0e-" + hexs(12),
        "requestId": hexs(32),
        "acknowledgeDisruption": True,
        "allowExperimental": False,
        "experimentMode": False,
        "actorHash": hashlib.sha256(b"admin@example.test").hexdigest(),
        "planId": hexs(64),
    }
    if action in ("reboot", "poweroff"):
        spec["planId"] = ""
    elif action == "configure-gpu-memory":
        spec.update(allowExperimental=True,
                    gpuMemory={"carveoutIndex": 1, "dynamicLimitMi": 65536})
    elif action == "configure-network":
        spec["networkRef"] = {"name": "host-network-" + hexs(32), "uid": "net-uid-1"}
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
    spec.update(overrides)
    return spec


def hostop(spec: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "HostOperation",
            "metadata": {"name": name or fresh_name(), "namespace": NAMESPACE}, "spec": spec}


def message_of(body: Any) -> str:
    return str(body.get("message", "")) if isinstance(body, dict) else str(body)
