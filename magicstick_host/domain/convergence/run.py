"""One host convergence run as the state keeps it, the journal records it and `status` shows it.

Pure. `magicstick-host converge` commits a "converge-started" entry (the run, result
"running") before the playbook starts and a "converge-finished" entry after it, both through the
state store, so a run that was killed half way stays visible as started without an end.
The changed tasks come from ansible's default output, the same text the log keeps.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from magicstick_host.domain.strict_json import loads_strict
from magicstick_host.lite_dataclasses import dataclass, replace

if TYPE_CHECKING:
    from typing import Any

RUNNING, SUCCEEDED, FAILED = "running", "succeeded", "failed"
MAX_CHANGED_TASKS = 50
MAX_MESSAGE = 1024
# the convergence playbook's one reboot (playbooks/roles/nvidia_display/tasks/reboot.yml)
REBOOT_TASK = "Schedule the one reboot after the first convergence"

# "TASK [k3s : Install K3s] ****": the role prefix is kept, it says which part changed
_TASK = re.compile(r"^TASK \[(?P<name>.*)\] \**$")
_CHANGED = re.compile(r"^changed: \[[^\]]*\](?: => \(item=(?P<item>.*?)\))?")
_FAILED = re.compile(r"^(fatal|failed): \[")
# the last of the kept changed tasks of a long run (finish_run)
_MORE = re.compile(r"^… and (?P<more>[0-9]+) more$")


def _failure_message(line: str) -> str:
    """The "msg" of `fatal: [host]: FAILED! => {...}` (one JSON object on the line)."""
    _, sep, body = line.partition(" => ")
    if not sep:
        return ""
    try:
        doc = loads_strict(body.encode("utf-8", errors="replace"))
    except ValueError:
        return ""
    msg = doc.get("msg") if isinstance(doc, dict) else None
    return msg if isinstance(msg, str) else ""


@dataclass(frozen=True)
class PlayOutcome:
    changed_tasks: tuple[str, ...]
    failed_task: str | None
    failure: str  # the failed task's "msg", "" when none was printed


def read_play_log(text: str) -> PlayOutcome:
    """The changed tasks (in order, loop items named) and the failed task of a default-callback
    ansible-playbook output."""
    changed: list[str] = []
    task, failed, failure = "?", None, ""
    for line in text.splitlines():
        match = _TASK.match(line)
        if match:
            task = match.group("name")
            continue
        change = _CHANGED.match(line)
        if change:
            item = change.group("item")
            changed.append(f"{task}: {item}" if item else task)
        elif _FAILED.match(line):
            failed = task
            failure = _failure_message(line)
    return PlayOutcome(tuple(dict.fromkeys(changed)), failed, " ".join(failure.split()))


@dataclass(frozen=True)
class ConvergenceRun:
    started_at: str  # RFC 3339
    boot_id: str
    result: str = RUNNING  # running | succeeded | failed
    finished_at: str = ""
    changed_tasks: tuple[str, ...] = ()
    message: str = ""
    reboot_scheduled: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "startedAt": self.started_at,
            "bootId": self.boot_id,
            "result": self.result,
            "finishedAt": self.finished_at,
            "changedTasks": list(self.changed_tasks),
            "message": self.message,
            "rebootScheduled": self.reboot_scheduled,
        }

    @staticmethod
    def from_json(doc: dict[str, Any]) -> ConvergenceRun:
        return ConvergenceRun(
            started_at=doc["startedAt"],
            boot_id=doc["bootId"],
            result=doc["result"],
            finished_at=doc["finishedAt"],
            changed_tasks=tuple(doc["changedTasks"]),
            message=doc["message"],
            reboot_scheduled=bool(doc["rebootScheduled"]),
        )


def start_run(previous: ConvergenceRun | None, *, at: str, boot_id: str) -> ConvergenceRun:
    note = ""
    if previous is not None and previous.result == RUNNING:
        # it held the lock until it died: nothing else ran in between, and Ansible converges
        note = f"the previous run (started {previous.started_at}) recorded no end; "
    return ConvergenceRun(
        started_at=at, boot_id=boot_id, message=f"{note}running the convergence playbook"
    )


def finish_run(
    run: ConvergenceRun,
    *,
    at: str,
    returncode: int,
    log_text: str,
    log_path: str,
    runner_note: str = "",
) -> ConvergenceRun:
    """The finished run. `runner_note` is what the command runner itself said (a timeout, a
    missing ansible-playbook), shown when no task failed."""
    play = read_play_log(log_text)
    changed = play.changed_tasks
    reboot = any(task.endswith(REBOOT_TASK) for task in changed)
    if returncode == 0:
        result = SUCCEEDED
        what = f"{len(changed)} task(s) changed" if changed else "nothing changed"
        message = f"converged: {what}"
        if reboot:
            message += "; the one reboot after the first convergence is scheduled (+1 min)"
    else:
        result = FAILED
        where = f"the task '{play.failed_task}' failed" if play.failed_task else (
            f"ansible-playbook exited {returncode}"
        )
        message = f"convergence failed: {where}"
        note = " ".join(runner_note.split())
        if play.failure:
            message += f": {play.failure}"
        elif note and not play.failed_task:
            message += f" ({note})"
    message = f"{message} (log {log_path})"
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 1] + "…"
    if len(changed) > MAX_CHANGED_TASKS:
        kept = MAX_CHANGED_TASKS - 1
        changed = (*changed[:kept], f"… and {len(changed) - kept} more")
    return replace(
        run,
        result=result,
        finished_at=at,
        changed_tasks=changed,
        message=message,
        reboot_scheduled=reboot,
    )


def changed_count(run: ConvergenceRun) -> int:
    """How many tasks the run changed, also those beyond the names it keeps."""
    tasks = run.changed_tasks
    more = _MORE.match(tasks[-1]) if tasks else None
    return len(tasks) - 1 + int(more.group("more")) if more else len(tasks)


def report_section(run: ConvergenceRun) -> dict[str, Any]:
    """The host report's optional `convergence` section (convergence.md): when the last run
    ended (started, while it runs or when it recorded no end), how it ended, how many tasks it
    changed and whether it scheduled the one reboot after the first convergence."""
    return {
        "lastRunAt": run.finished_at or run.started_at,
        "result": run.result,
        "changed": changed_count(run),
        "rebootScheduled": run.reboot_scheduled,
    }


def journal_entry(run: ConvergenceRun) -> dict[str, Any]:
    """"converge-started" while running, then "converge-finished" (the store adds `seq`)."""
    finished = run.result != RUNNING
    entry: dict[str, Any] = {
        "at": run.finished_at if finished else run.started_at,
        "event": "converge-finished" if finished else "converge-started",
        "bootId": run.boot_id,
        "message": run.message,
        "startedAt": run.started_at,
    }
    if finished:
        entry.update(
            outcome=run.result,
            finishedAt=run.finished_at,
            changedTasks=list(run.changed_tasks),
            rebootScheduled=run.reboot_scheduled,
        )
    return entry


def render_convergence(doc: dict[str, Any] | None) -> list[str]:
    """The `status` lines of the last run (`doc` is ConvergenceRun.to_json() or None)."""
    if doc is None:
        return ["Converge:   never run on this host (magicstick-host converge)"]
    if doc["result"] == RUNNING:
        return [
            f"Converge:   started {doc['startedAt']}, no end recorded (running now, or the run "
            "was interrupted; the next run starts over)"
        ]
    lines = [
        f"Converge:   {doc['result']} {doc['finishedAt']} (started {doc['startedAt']}): "
        f"{doc['message']}"
    ]
    lines += [f"  changed: {task}" for task in doc["changedTasks"]]
    return lines
