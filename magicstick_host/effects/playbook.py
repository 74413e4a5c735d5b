"""Run one of the shipped playbooks with a vars file, a bounded timeout and a 0600 log.

The run can take minutes, so it happens on a worker thread while this thread keeps the Node
report fresh (the dashboard marks a host unavailable after 180 s without a report).
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from magicstick_host.errors import MagicstickError
from magicstick_host.ports.runner import CommandResult

if TYPE_CHECKING:
    from typing import Any

    from magicstick_host.effects.effect_ports import EffectPorts

HEARTBEAT_S = 30.0
# the failed task is named in the log's last lines: a log of a run that flooded it (the runner
# caps it at 128 MiB) is read from its end only
LOG_TAIL_BYTES = 1024 * 1024
# "TASK [prepare : Install the approved kernel packages] ****": the role prefix is dropped
_TASK = re.compile(r"^TASK \[(?:[\w.-]+ : )?(?P<name>.*)\]")
_FAILED = re.compile(r"^(fatal|failed): \[")
# what of a failed task's own message the detail keeps (the log has all of it)
MSG_CHARS = 240


def failed_task(log_text: str) -> str | None:
    """The name of the last task that failed, from ansible's default output."""
    return _last_failure(log_text)[0]


def failed_message(log_text: str) -> str:
    """The first line of the last failed task's `msg` ("Failed to lock apt for exclusive
    operation: ..."), clipped; "" when it has none or it cannot be read."""
    return _last_failure(log_text)[1]


def _last_failure(log_text: str) -> tuple[str | None, str]:
    current, failed, message = None, None, ""
    for line in log_text.splitlines():
        match = _TASK.match(line)
        if match:
            current = match.group("name")
        elif _FAILED.match(line):
            failed, message = current, _msg(line)
    return failed, message


def _msg(line: str) -> str:
    _, arrow, body = line.partition(" => ")
    if not arrow or len(body) > LOG_TAIL_BYTES:
        return ""
    try:
        result = json.loads(body)
    except (ValueError, RecursionError):  # a line that is not ansible's JSON, or nested deep
        return ""
    msg = result.get("msg") if isinstance(result, dict) else None
    if not isinstance(msg, str) or not msg.strip():
        return ""
    first = _errors_first(" ".join(msg.strip().splitlines()[0].split()))
    return first if len(first) <= MSG_CHARS else first[: MSG_CHARS - 1] + "…"


# apt's messages as the apt module joins them: "Failed to update apt cache after 5 retries:
# W:..., W:..., E:The repository '...' is not signed."
_APT_ITEMS = re.compile(r": (?=[WE]:)")
_APT_ITEM = re.compile(r", (?=[WE]:)")


def _errors_first(text: str) -> str:
    """apt's errors before its warnings: apt warns first (three lines of apt-secure advice for
    an unsigned repository, seen in the appliance VM) and says why it failed last, where the
    clipping would cut it."""
    match = _APT_ITEMS.search(text)
    if match is None:
        return text
    items = _APT_ITEM.split(text[match.end():])
    errors = [item for item in items if item.startswith("E:")]
    if not errors or items[: len(errors)] == errors:
        return text
    rest = [item for item in items if not item.startswith("E:")]
    return f"{text[: match.end()]}{', '.join(errors + rest)}"


def log_tail(path: Path, limit: int = LOG_TAIL_BYTES) -> str:
    """The last `limit` bytes of a log, from a line start where it is cut."""
    with open(path, "rb") as log:
        size = log.seek(0, os.SEEK_END)
        log.seek(max(0, size - limit))
        data = log.read(limit)
    if size > limit:
        data = data[data.find(b"\n") + 1:]
    return data.decode("utf-8", errors="replace")


def write_vars(work_dir: Path, name: str, variables: dict[str, Any]) -> Path:
    directory = work_dir / "vars"
    directory.mkdir(mode=0o700, exist_ok=True)
    path = directory / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(variables, out, sort_keys=True)
        out.flush()
        os.fsync(out.fileno())
    return path


def run_playbook(
    ports: EffectPorts, playbook: str, request_uid: str, variables: dict[str, Any]
) -> tuple[bool, str]:
    try:
        vars_path = write_vars(ports.work_dir, f"{request_uid}-{playbook}.json", variables)
        log_path = ports.log_path(request_uid)
        # created 0600 here: the runner appends to it, and the output may show package details
        os.close(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600))
    except OSError as exc:  # nothing ran: a known outcome, not an interrupted step
        return False, f"{playbook} did not run: {exc.filename}: {exc.strerror or exc}"
    except MagicstickError as exc:
        return False, f"{playbook} did not run: {exc}"
    argv = [
        "ansible-playbook",
        "-i",
        "localhost,",
        "-c",
        "local",
        str(ports.playbooks_dir / playbook),
        "-e",
        f"@{vars_path}",
    ]
    env = {
        **os.environ,
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_FORCE_COLOR": "0",
    }
    outcome: list[CommandResult] = []
    crash: list[BaseException] = []

    def work() -> None:
        try:
            outcome.append(
                ports.runner.run(
                    argv, timeout=ports.playbook_timeout_s, env=env, stdout_path=str(log_path)
                )
            )
        except BaseException as exc:  # re-raised on the calling thread, never swallowed
            crash.append(exc)

    thread = threading.Thread(target=work, name=f"playbook-{playbook}", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(HEARTBEAT_S)
        if thread.is_alive():
            ports.heartbeat()
    if crash:
        raise crash[0]
    result = outcome[0]
    if result.ok:
        return True, f"{playbook} succeeded (log {log_path})"
    try:
        text = log_tail(log_path)
    except OSError:
        text = result.stdout + result.stderr
    task, message = _last_failure(text)
    what = f"the task '{task}' failed" if task else f"{playbook} exited {result.returncode}"
    if task and message:
        what += f": {message}"
    return False, f"{what}; see {log_path}"
