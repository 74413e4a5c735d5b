"""What configure-network and scan-wifi share: their intake rules, their data record, the step
that consumes the request Secret, and what the tick shows them of the network. Pure.

The tick puts the network into the Situation's capabilities (magicstick_host/network/view.py):
`network` (the published section), `NETWORK_INVENTORY` (the inventory it was built from) and
`NETWORK_TRIAL` (the trial record, or None). Nothing here ever holds a password: the request
Secret is read by the `read-network-request` step, whose effect keeps the approved settings in
one 0600 file of the state directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from magicstick_host.domain.decisions import (
    ClassifiedStep,
    Decision,
    RunStep,
    SetPhase,
    Situation,
    Wait,
)
from magicstick_host.domain.limits import Limits
from magicstick_host.domain.network.capability import NetworkInventory
from magicstick_host.domain.network.operation import CONFIRMATION_ANNOTATION, spec_problem
from magicstick_host.domain.network.request import SECRET_NAMESPACE, NetworkRef, network_ref
from magicstick_host.domain.network.trial import TrialRecord
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.request import Accepted, HostFacts
from magicstick_host.domain.state import Operation
from magicstick_host.lite_dataclasses import dataclass

if TYPE_CHECKING:
    from typing import Any

NETWORK_INVENTORY = "networkInventory"
NETWORK_TRIAL = "networkTrial"
NETWORK_SETTINGS_KEPT = "networkSettingsKept"
NETWORK_SCAN_AT = "networkScanAt"
READ_REQUEST = "read-network-request"
REQUEST_FIELDS = frozenset({"networkRef"})


@dataclass(frozen=True)
class NetworkData:
    """The request Secret's name and UID (from networkRef), and the confirmation deadline
    once the change is applied (status.confirmationDeadline)."""

    secret_name: str
    secret_uid: str
    confirmation_deadline: str = ""

    def status_fields(self, phase: Phase) -> dict[str, Any]:
        """What the HostOperation status shows beyond the common fields (only while
        AwaitingConfirmation: contract.md)."""
        if not self.confirmation_deadline:
            return {}
        if phase == Phase.AWAITING_CONFIRMATION:
            return {"confirmationDeadline": self.confirmation_deadline}
        # the status is merge-patched: null removes the deadline once it no longer applies
        return {"confirmationDeadline": None}


def checker(action: str) -> Any:
    def check_request(spec: dict[str, Any], host: HostFacts, limits: Limits) -> str | None:
        return spec_problem(spec, action, host.capabilities.get("network") or {})

    return check_request


def start(req: Accepted, now: Situation) -> NetworkData:
    ref = network_ref(req.spec, req.request_id)
    # intake checked networkRef (spec_problem): a bad one cannot get here
    assert isinstance(ref, NetworkRef)
    return NetworkData(secret_name=ref.name, secret_uid=ref.uid)


def data_of(op: Operation) -> NetworkData:
    assert isinstance(op.data, NetworkData)
    return op.data


def inventory_of(now: Situation) -> NetworkInventory | None:
    inventory = now.capabilities.get(NETWORK_INVENTORY)
    return inventory if isinstance(inventory, NetworkInventory) else None


def trial_of(now: Situation) -> TrialRecord | None:
    trial = now.capabilities.get(NETWORK_TRIAL)
    return trial if isinstance(trial, TrialRecord) else None


def network_of(capabilities: Mapping[str, Any]) -> dict[str, Any]:
    network = capabilities.get("network")
    return network if isinstance(network, dict) else {}


def changed_since_review(op: Operation, now: Situation) -> SetPhase | None:
    """The network the request was approved against (its planId) must still be the host's.
    Asked before any change on the host, so a refusal is Rejected (network.md)."""
    if network_of(now.capabilities).get("id") == op.plan_id:
        return None
    return SetPhase(
        Phase.REJECTED,
        "The network settings of this host changed since they were reviewed (the network id "
        "differs); review them again. Nothing was changed.",
    )


def own_request(op: Operation, now: Situation) -> dict[str, Any] | None:
    """The operation's HostOperation as Kubernetes showed it this tick, if it could."""
    request = now.cluster.request
    if not now.cluster.ok or not isinstance(request, dict):
        return None
    if (request.get("metadata") or {}).get("uid") != op.request_uid:
        return None
    return request


def status_published(op: Operation, now: Situation, phase: Phase) -> bool:
    status = (own_request(op, now) or {}).get("status") or {}
    return status.get("phase") == str(phase) and status.get("requestId") == op.request_id


def confirmation(op: Operation, now: Situation) -> str | None:
    """The value of the confirmation annotation, when Kubernetes showed the request."""
    annotations = ((own_request(op, now) or {}).get("metadata") or {}).get("annotations") or {}
    value = annotations.get(CONFIRMATION_ANNOTATION)
    return value if isinstance(value, str) else None


def read_request(op: Operation, now: Situation, *, then: Phase, message: str) -> Decision:
    """Accepted: read the request Secret once, check it, keep the approved settings, delete it.
    Nothing on the host changes in this step, so whatever it refuses (the Secret, the settings,
    a Secret that cannot be read) ends Rejected with the rule named (network.md)."""
    changed = changed_since_review(op, now)
    if changed is not None:
        return changed
    inventory = inventory_of(now)
    if not now.cluster.ok or inventory is None:
        return Wait("Waiting for Kubernetes to read the request's network settings.")
    data = data_of(op)
    return RunStep(
        step=READ_REQUEST,
        inputs={
            "action": op.action,
            "namespace": SECRET_NAMESPACE,
            "name": data.secret_name,
            "uid": data.secret_uid,
            "requestId": op.request_id,
            "nodeUid": now.cluster.node_uid,
            "clusterAddresses": list(inventory.cluster_addresses),
        },
        phase_on_done=then,
        message_on_done=message,
        message_on_failure="",
        phase_on_failure=Phase.REJECTED,
    )


def classify_reading(op: Operation, now: Situation, *, then: Phase,
                     message: str) -> ClassifiedStep:
    """The Secret step has no outcome: its effect keeps the approved settings before it deletes
    the Secret, so kept settings mean it got through; otherwise it is never repeated."""
    if now.capabilities.get(NETWORK_SETTINGS_KEPT) is True:
        return ClassifiedStep("classified-done", "the approved settings are kept",
                              SetPhase(then, message))
    return ClassifiedStep(
        "unknown",
        "the worker stopped while it read the request Secret",
        SetPhase(
            Phase.INTERRUPTED,
            "The worker stopped while it read the request's network settings; nothing was "
            "changed on the host. Create a new request if it is still wanted.",
            outcome="uncertain",
        ),
    )


def legacy_data(current: dict[str, Any]) -> tuple[NetworkData, list[str]]:
    """The original worker never ran network operations: nothing to carry over."""
    return NetworkData(secret_name="", secret_uid=""), []
