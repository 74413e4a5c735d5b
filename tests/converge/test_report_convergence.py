"""The host report's optional `convergence` section (convergence.md, domain/report.py): the last
run of host convergence, `{lastRunAt, result, changed, rebootScheduled}`, so the dashboard can
show that the base host converged. No run yet: no section (contract.md: optional report fields).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from magicstick_host import schemas
from magicstick_host.domain.convergence.run import (
    MAX_CHANGED_TASKS,
    ConvergenceRun,
    finish_run,
    start_run,
)
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.nvidia_health import nvidia_health
from magicstick_host.domain.report import build_report
from magicstick_host.domain.state import Block, State

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
STARTED, FINISHED = "2026-12-01T11:58:00Z", "2026-12-01T11:59:30Z"


def inspection() -> dict[str, Any]:
    return {
        "evidence": {"bootId": "b", "kernel": {"release": "7.0.0-31-generic"}},
        "plan": {"state": "ready", "message": "m"},
        "gpuMemory": {"supported": False, "message": "m"},
        "actions": ["reboot"],
        "nvidia": nvidia_health(Evidence()),
    }


def report(run: ConvergenceRun | None, block: Block | None = None) -> dict[str, Any]:
    return build_report(inspection(), node_uid="uid-1", state=State(convergence=run, block=block),
                        observed_at=NOW)


def finished(log: str, returncode: int = 0) -> ConvergenceRun:
    run = start_run(None, at=STARTED, boot_id="b")
    return finish_run(run, at=FINISHED, returncode=returncode, log_text=log, log_path="/l")


def changed(*tasks: str) -> str:
    return "".join(f"TASK [{t}] ****\nchanged: [localhost]\n" for t in tasks)


def convergence_problems(doc: dict[str, Any]) -> list[str]:
    return [p for p in schemas.errors("report", doc) if p.startswith("convergence")]


def test_no_run_yet_no_section() -> None:
    assert "convergence" not in report(None)


def test_a_run_that_changed_nothing() -> None:
    doc = report(finished("TASK [k3s : Check the K3s version pin] ****\nok: [localhost]\n"))
    assert doc["convergence"] == {"lastRunAt": FINISHED, "result": "succeeded", "changed": 0,
                                  "rebootScheduled": False}
    assert convergence_problems(doc) == []


def test_the_first_run_with_its_reboot() -> None:
    log = changed("nvidia_display : Set the nvidia-drm options (modprobe.d)",
                  "nvidia_display : Schedule the one reboot after the first convergence")
    doc = report(finished(log))
    assert doc["convergence"] == {"lastRunAt": FINISHED, "result": "succeeded", "changed": 2,
                                  "rebootScheduled": True}
    assert convergence_problems(doc) == []


def test_a_failed_and_a_running_run() -> None:
    log = 'TASK [k3s : Install K3s] ****\nfatal: [localhost]: FAILED! => {"msg": "x"}\n'
    failed = finished(log, returncode=2)
    assert report(failed)["convergence"]["result"] == "failed"
    running = report(start_run(None, at=STARTED, boot_id="b"))["convergence"]
    assert running == {"lastRunAt": STARTED, "result": "running", "changed": 0,
                       "rebootScheduled": False}
    assert convergence_problems(report(failed)) == []


def test_changed_counts_every_task_beyond_the_kept_names() -> None:
    run = finished(changed(*(f"role : task {i}" for i in range(MAX_CHANGED_TASKS + 25))))
    assert len(run.changed_tasks) == MAX_CHANGED_TASKS
    assert report(run)["convergence"]["changed"] == MAX_CHANGED_TASKS + 25


def test_a_stopped_worker_still_shows_the_last_run() -> None:
    block = Block("corrupt-state", "state.json is corrupt", "2026-12-01T12:00:00Z")
    doc = report(finished(""), block)
    assert doc["convergence"]["result"] == "succeeded"


@pytest.mark.parametrize("bad", [
    {"lastRunAt": "yesterday", "result": "succeeded", "changed": 0, "rebootScheduled": False},
    {"lastRunAt": FINISHED, "result": "done", "changed": 0, "rebootScheduled": False},
    {"lastRunAt": FINISHED, "result": "succeeded", "changed": -1, "rebootScheduled": False},
    {"lastRunAt": FINISHED, "result": "succeeded", "changed": 0},
])
def test_the_schema_holds_the_section(bad: dict[str, Any]) -> None:
    assert convergence_problems({**report(finished("")), "convergence": bad}) != []
