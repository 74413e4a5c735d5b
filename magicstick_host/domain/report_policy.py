"""When and how the host report (the Node annotation) is published. Pure: no I/O, no clock.

contract.md, "The host report":
- publish only when the Node's `status.nodeInfo` shows this boot (bootID and kernelVersion);
- the value is compact JSON of at most 32768 characters;
- the dashboard treats it as fresh only while `observedAt` is within -30 s ... +180 s of its
  own clock, so the worker rewrites it at least once a minute even when nothing changed
  (`should_write`), and at once when the content changed.

Size: `encode_report` drops clearly optional bulk, in this fixed order, until the value fits:
1. `plan.experiment.message` (the experiment alternative's explanatory text) becomes "";
2. every `gpuMemory.options[].label` becomes "" (the dashboard can label by `sizeMi`);
3. `operation.message` and `gpuMemory.message` are cut to 256 characters.
Identity fields, ids, `plan.message`, packages and actions are never touched: if it still does
not fit, ReportTooLargeError is raised (a bug: the largest realistic payload is far below the
cap, see tests/test_report_policy.py). The encoding is ASCII-only (`ensure_ascii`), so the
character count is the same for Python, Go and JavaScript readers.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from magicstick_host.domain.strict_json import REPORT
from magicstick_host.errors import ExitCode, MagicstickError

if TYPE_CHECKING:
    from typing import Any

MAX_REPORT_CHARS = 32768
MIN_WRITE_INTERVAL_S = 60.0
FRESH_PAST_S = 180.0
FRESH_FUTURE_S = 30.0
SCHEMA_VERSION = 1
CUT_MESSAGE_CHARS = 256

if TYPE_CHECKING:
    Json = dict[str, Any]


class ReportTooLargeError(MagicstickError):
    """The report does not fit even after dropping the optional bulk. A bug, never expected."""

    code = "report-too-large"
    exit_code = ExitCode.INTERNAL


def encode(report: Json) -> str:
    """The canonical compact encoding (sorted keys, no spaces)."""
    return json.dumps(report, sort_keys=True, separators=(",", ":"))


def _node_info(node: Json) -> Json:
    info = ((node or {}).get("status") or {}).get("nodeInfo") or {}
    return info if isinstance(info, dict) else {}


def may_publish(node: Json, boot_id: str, kernel: str) -> tuple[bool, str]:
    """Publish only when the kubelet already reports this boot and kernel on the Node."""
    info = _node_info(node)
    node_boot = str(info.get("bootID") or "")
    node_kernel = str(info.get("kernelVersion") or "")
    if not boot_id or not kernel:
        return False, "this boot's ID or kernel release is unknown"
    if node_boot != boot_id:
        return False, (f"the Node reports boot ID {node_boot or '(none)'!r}, this host runs "
                       f"{boot_id!r}: waiting for the kubelet to report this boot")
    if node_kernel != kernel:
        return False, (f"the Node reports kernel {node_kernel or '(none)'!r}, this host runs "
                       f"{kernel!r}: waiting for the kubelet to report this boot")
    return True, "the Node reports this boot"


def _cut(text: Any, limit: int = CUT_MESSAGE_CHARS) -> Any:
    if isinstance(text, str) and len(text) > limit:
        return text[: limit - 1] + "…"
    return text


def _drop_experiment_message(r: Json) -> None:
    experiment = (r.get("plan") or {}).get("experiment")
    if isinstance(experiment, dict) and experiment.get("message"):
        experiment["message"] = ""


def _drop_option_labels(r: Json) -> None:
    for option in (r.get("gpuMemory") or {}).get("options") or []:
        if isinstance(option, dict) and "label" in option:
            option["label"] = ""


def _cut_messages(r: Json) -> None:
    for section in ("operation", "gpuMemory"):
        part = r.get(section)
        if isinstance(part, dict) and "message" in part:
            part["message"] = _cut(part["message"])


TRIM_STEPS = (_drop_experiment_message, _drop_option_labels, _cut_messages)


def encode_report(report: Json, max_chars: int = MAX_REPORT_CHARS) -> str:
    """Compact JSON of `report` within `max_chars`, trimming optional bulk in the fixed order."""
    value = encode(report)
    if len(value) <= max_chars:
        return value
    import copy  # a report over the limit is rare; copy (with weakref) is not on every tick

    trimmed = copy.deepcopy(report)
    for step in TRIM_STEPS:
        step(trimmed)
        value = encode(trimmed)
        if len(value) <= max_chars:
            return value
    raise ReportTooLargeError(
        f"the host report is {len(value)} characters after trimming, over the {max_chars} limit"
    )


def _seconds(t: datetime | float) -> float:
    return t.timestamp() if isinstance(t, datetime) else float(t)


def should_write(
    previous_digest: str | None,
    previous_written_at: datetime | float | None,
    new_digest: str,
    now: datetime | float,
    min_interval: float = MIN_WRITE_INTERVAL_S,
) -> bool:
    """Write when the content changed, or `min_interval` seconds passed since the last write.

    A clock that went backwards (now before the last write) also writes: better one extra write
    than a report that goes stale.
    """
    if previous_digest is None or previous_written_at is None:
        return True
    if new_digest != previous_digest:
        return True
    elapsed = _seconds(now) - _seconds(previous_written_at)
    return elapsed >= min_interval or elapsed < 0


def parse_observed_at(value: Any) -> datetime | None:
    """An RFC 3339 UTC time ending in Z, or None."""
    if not isinstance(value, str) or not value.endswith("Z"):
        return None
    try:
        parsed = datetime.fromisoformat(value[:-1] + "+00:00")
    except ValueError:
        return None
    return parsed.astimezone(UTC)


def dashboard_considers_fresh(value: str, node: Json, now: datetime) -> tuple[bool, str]:
    """The dashboard's rules (contract.md): is this annotation value fresh for this Node now?"""
    if len(value) > MAX_REPORT_CHARS:
        return False, f"the report is {len(value)} characters, over {MAX_REPORT_CHARS}"
    try:
        report = REPORT.loads(value)
    except ValueError as exc:
        return False, f"the report is not JSON ({exc})"
    if not isinstance(report, dict):
        return False, "the report is not a JSON object"
    if report.get("schemaVersion") != SCHEMA_VERSION:
        return False, f"schemaVersion is {report.get('schemaVersion')!r}, not {SCHEMA_VERSION}"
    observed = parse_observed_at(report.get("observedAt"))
    if observed is None:
        return False, f"observedAt {report.get('observedAt')!r} is not an RFC 3339 UTC time"
    age = (now - observed).total_seconds()
    if age > FRESH_PAST_S:
        return False, f"observedAt is {age:.0f} s old (more than {FRESH_PAST_S:.0f} s)"
    if age < -FRESH_FUTURE_S:
        return False, f"observedAt is {-age:.0f} s in the future (more than {FRESH_FUTURE_S:.0f} s)"
    node_uid = str(((node or {}).get("metadata") or {}).get("uid") or "")
    if report.get("nodeUid") != node_uid:
        return False, "nodeUid is not this Node's UID"
    info = _node_info(node)
    if report.get("bootId") != info.get("bootID"):
        return False, "bootId is not the Node's status.nodeInfo.bootID"
    if report.get("kernel") != info.get("kernelVersion"):
        return False, "kernel is not the Node's status.nodeInfo.kernelVersion"
    return True, "fresh"
