"""scan-wifi (network.md, "Scanning"): the networks a Wi-Fi interface sees, into the report.
Pure.

Accepted → `read-network-request` (the Secret names the interface; read once, deleted) →
Preparing → `scan-wifi` (`iw dev <if> scan`, 25 s; the result becomes `network.scan`: one
entry per SSID, the strongest, sorted by signal, at most 32) → Succeeded. Nothing on the host
changes; an interrupted step is never repeated (Interrupted).
"""

from __future__ import annotations

from magicstick_host.domain.decisions import ClassifiedStep, Decision, RunStep, SetPhase, Situation
from magicstick_host.domain.network.operation import SCAN
from magicstick_host.domain.operations import network_common as common
from magicstick_host.domain.operations import offer_rules
from magicstick_host.domain.operations.kind import LegacyRules, OperationKind
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.state import Operation

SCAN_STEP = "scan-wifi"
SCANNING = "Preparing: scanning for Wi-Fi networks."
SCANNED = "The Wi-Fi scan finished; the networks found are in the host report."


def accepted(op: Operation, now: Situation) -> Decision:
    return common.read_request(op, now, then=Phase.PREPARING, message=SCANNING)


def preparing(op: Operation, now: Situation) -> Decision:
    return RunStep(
        step=SCAN_STEP,
        inputs={"requestId": op.request_id},
        phase_on_done=Phase.SUCCEEDED,
        message_on_done=SCANNED,
        message_on_failure="The Wi-Fi scan failed:",
    )


def classify(op: Operation, now: Situation) -> ClassifiedStep:
    step = op.open_step
    assert step is not None
    if step.name == common.READ_REQUEST:
        return common.classify_reading(op, now, then=Phase.PREPARING, message=SCANNING)
    scanned_at = now.capabilities.get(common.NETWORK_SCAN_AT) or ""
    if scanned_at >= step.started_at:
        # the scan saved its result after the step began: it ran; nothing is scanned again
        return ClassifiedStep("classified-done", f"a scan result from {scanned_at} is saved",
                              SetPhase(Phase.SUCCEEDED, SCANNED))
    return ClassifiedStep(
        "unknown",
        "the worker stopped during the scan",
        SetPhase(Phase.INTERRUPTED, "The worker stopped during the Wi-Fi scan; nothing was "
                                    "changed. Scan again if you still want the list.",
                 outcome="uncertain"),
    )


SCAN_WIFI = OperationKind(
    action=SCAN,
    request_fields=common.REQUEST_FIELDS,
    check_request=common.checker(SCAN),
    offered=offer_rules.scan_wifi,
    reads=(),
    data=common.NetworkData,
    start=common.start,
    phases={Phase.ACCEPTED: accepted, Phase.PREPARING: preparing},
    classify=classify,
    restart_budget=0,
    steps=frozenset({common.READ_REQUEST, SCAN_STEP}),
    legacy=LegacyRules(data=common.legacy_data, resumes={}),
)
