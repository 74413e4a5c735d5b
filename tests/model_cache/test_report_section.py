"""The `modelCache` section in the report (domain/report.py): withdrawn by a stopped worker,
and its free disk space no change of content by itself (the report is still refreshed every
minute)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from magicstick_host import schemas
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.model_cache.blockers import Blockers
from magicstick_host.domain.nvidia_health import nvidia_health
from magicstick_host.domain.report import build_report, report_content_digest_input
from magicstick_host.domain.state import Block, State
from tests.model_cache.test_operation import facts

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


def inspection(section: dict[str, Any]) -> dict[str, Any]:
    return {
        "evidence": {"bootId": "b", "kernel": {"release": "7.0.0-31-generic"}},
        "plan": {"state": "ready", "message": "m"},
        "gpuMemory": {"supported": False, "message": "m"},
        "modelCache": section,
        "actions": ["clear-model-cache"],
        "nvidia": nvidia_health(Evidence()),
    }


def test_the_offered_section_is_in_the_report_and_matches_the_schema() -> None:
    report = build_report(inspection(facts().section), node_uid="uid-1", state=State(),
                          observed_at=NOW)
    assert report["modelCache"] == facts().section
    problems = [p for p in schemas.errors("report", report) if p.startswith("modelCache")]
    assert problems == []


def test_a_stopped_worker_withdraws_the_cleanup() -> None:
    blocked = State(block=Block("corrupt-state", "state.json is corrupt", "2026-12-01T12:00:00Z"))
    report = build_report(inspection(facts().section), node_uid="uid-1", state=blocked,
                          observed_at=NOW)
    assert report["modelCache"]["supported"] is False
    assert "state.json is corrupt" in report["modelCache"]["message"]
    assert report["actions"] == []


def test_free_space_alone_is_no_change_of_content() -> None:
    def digest_input(section: dict[str, Any]) -> dict[str, Any]:
        report = build_report(inspection(section), node_uid="uid-1", state=State(),
                              observed_at=NOW)
        return report_content_digest_input(report)

    section = facts().section
    assert digest_input(section) == digest_input({**section, "freeBytes": 1})
    blocked = facts(blockers=Blockers(found=("KubeAI Model a/b",))).section
    assert digest_input(section) != digest_input(blocked)
    assert digest_input(section) != digest_input({**section, "reclaimableBytes": 1})
