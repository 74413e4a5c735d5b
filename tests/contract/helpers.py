"""Shared builders for the contract tests (real apiserver; fresh names per test).

The requests themselves come from dashboard_objects.py: `valid_spec` is `dashboard_spec`.
"""

from __future__ import annotations

from typing import Any

from tests.contract.dashboard_objects import (
    GROUP,
    NAMESPACE,
    VERSION,
    dashboard_object,
    dashboard_spec,
    fresh_name,
    hexs,
)

__all__ = ["GROUP", "HANDLED", "HOSTOPS", "MERGE", "MODACTS", "NAMESPACE", "OTHERS", "VERSION",
           "fresh_name", "hexs", "hostop", "message_of", "valid_spec"]

HOSTOPS = f"/apis/{GROUP}/{VERSION}/namespaces/{NAMESPACE}/hostoperations"
MODACTS = f"/apis/{GROUP}/{VERSION}/namespaces/{NAMESPACE}/moduleactivations"
MERGE = "application/merge-patch+json"

HANDLED = ("prepare-gpu", "configure-gpu-memory", "reboot", "poweroff")
OTHERS = ("clear-model-cache", "configure-network", "scan-wifi", "configure-updates",
          "check-updates", "install-updates", "check-software-channel", "apply-software-channel")

valid_spec = dashboard_spec


def hostop(spec: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    return dashboard_object(spec, name)


def message_of(body: Any) -> str:
    return str(body.get("message", "")) if isinstance(body, dict) else str(body)
