"""What a tick says in the journal: quiet when idle, loud when it matters. Pure.

Two kinds of line (the CLI prints them: cli/journal.py):
- an event, said once when it happens: every transition the journal records (a request
  accepted, a step begun or done, a phase reached, a request rejected, a status refused),
  each with its request ID;
- a condition, said when it starts and when it ends however many ticks it lasts (Kubernetes
  unreachable, the report waiting for the kubelet, cloud-init running, a blocked state
  directory), under a stable `key` (the timer's ticks remember which ones they said:
  ports/log_memory.py).
An idle tick has neither. Levels are syslog's: notice for what goes as planned, warning for a
refusal, a failure or a stop, err for what keeps the worker from working at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.phase import Phase
from magicstick_host.domain.state import State
from magicstick_host.lite_dataclasses import dataclass

if TYPE_CHECKING:
    from typing import Literal

    Level = Literal["notice", "warning", "err"]
# the outcomes an administrator must look at
_BAD_ENDS = frozenset({Phase.FAILED, Phase.INTERRUPTED, Phase.ROLLED_BACK})


@dataclass(frozen=True)
class LogLine:
    level: Level
    text: str
    key: str = ""  # a condition's key; "" for an event

    @property
    def is_condition(self) -> bool:
        return bool(self.key)


def condition(key: str, level: Level, text: str) -> LogLine:
    return LogLine(level, text, key)


# -- the conditions a tick meets ---------------------------------------------------------------


def kubernetes_unreachable(error: str) -> LogLine:
    return condition(
        "kubernetes",
        "warning",
        "Kubernetes cannot be reached or refused the worker; the local operation goes on and "
        f"the status and report follow when it answers: {error}",
    )


def kubeconfig_unusable(error: str) -> LogLine:
    return condition(
        "kubeconfig",
        "err",
        "the kubeconfig cannot be used, so nothing is read from or reported to Kubernetes; the "
        f"local operation goes on: {error}",
    )


def node_missing(node_name: str) -> LogLine:
    return condition(
        "node",
        "warning",
        f"the Node {node_name} is not in the cluster (renamed or deleted?): nothing is "
        "reported and no request is taken",
    )


def report_waits(why: str) -> LogLine:
    return condition("report", "notice", f"the host report waits: {why}")


def cloud_init_running(why: str) -> LogLine:
    return condition("cloud-init", "notice", f"{why}; nothing runs until it ends")


def tick_stopped(code: str, message: str) -> LogLine:
    """A tick that an error stopped (a blocked or unwritable state directory, bad input)."""
    return condition(f"error:{code}", "err", f"{code}: {message}")


def _what(event: str, state: State) -> str:
    """How the line says the transition (the operation's message follows)."""
    op = state.operation
    assert op is not None
    step = op.steps[-1] if op.steps else None
    if event == "accepted":
        return f" accepted: {op.message}"
    if event.startswith("intent:"):
        return f": step {event.removeprefix('intent:')} begins"
    detail = f" ({step.detail})" if step is not None and step.detail else ""
    if event.startswith("outcome:") and step is not None:
        return f": step {step.name} {step.outcome}{detail}; {op.phase}: {op.message}"
    if event == "classified" and step is not None:
        return (
            f": step {step.name} had no outcome, told from the host: {step.outcome}{detail}; "
            f"{op.phase}: {op.message}"
        )
    return f": {op.phase}: {op.message}"


def transition_line(event: str, state: State) -> LogLine:
    """The line of a transition the journal records (`event` as history.py names it)."""
    if event == "rejected" and state.processed:
        rejected = state.processed[-1]
        message = str((rejected.pending_status or {}).get("message", ""))
        return LogLine("warning", f"request {rejected.request_id} rejected: {message}")
    if event == "rejection-refused":
        return LogLine("warning", "the cluster refused a rejection's status; it is not sent again")
    op = state.operation
    if op is None:
        return LogLine("notice", event.replace("-", " "))
    if event == "status-refused":
        return LogLine(
            "warning",
            f"{op.action} request {op.request_id}: the cluster refused its status "
            f"({op.status_refused}); the operation goes on, the status is sent again when it "
            "changes",
        )
    level: Level = "warning" if op.phase in _BAD_ENDS else "notice"
    return LogLine(level, f"{op.action} request {op.request_id}{_what(event, state)}")
