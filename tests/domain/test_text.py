"""Free text as the documents bound it (domain/text.py; issue #24 N6): each limit is the schemas'
`maxLength`, held here in one table, and whatever a message quotes (a 2 kB path, a non-UTF-8
file name, an API's or a command's answer), the state, the report and the HostOperation status
made from it are valid."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magicstick_host import app, schemas
from magicstick_host.domain.convergence import run as convergence_run
from magicstick_host.domain.model_cache.blockers import Blockers
from magicstick_host.domain.model_cache.capability import model_cache_section
from magicstick_host.domain.model_cache.inventory import CacheInventory
from magicstick_host.domain.operations import lifecycle
from magicstick_host.domain.report import build_report
from magicstick_host.domain.request import Rejected, rejection_status
from magicstick_host.domain.state import Block, State
from magicstick_host.domain.text import (
    MAX_CONVERGENCE_MESSAGE,
    MAX_MESSAGE,
    MAX_STATUS_REFUSED,
    clip_message,
)
from magicstick_host.lite_dataclasses import replace
from magicstick_host.ports.state_document import document_errors
from magicstick_host.sim.writer import create_host
from tests.ports.test_state_store import a_state

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "magicstick_host" / "schemas"
CRD = REPO / "playbooks" / "files" / "manifests" / "magicstick-host-10-hostoperation-crd.yaml"
TEXT_FIELDS = ("message", "statusRefused", "detail", "reason", "advice", "stateError",
               "journalError")

# every free-text field of a shipped schema, and its bound: the documents the worker writes
# (state.json, the report and its sections, the network trial) are bounded by text.py's
# constants; the console's documents and the journal are not, and quote bounded text
LIMITS: dict[tuple[str, str], int | None] = {
    ("state", "#/properties/block/oneOf/1/properties/message"): MAX_MESSAGE,
    ("state", "#/$defs/operation/properties/message"): MAX_MESSAGE,
    ("state", "#/$defs/operation/properties/statusRefused"): MAX_STATUS_REFUSED,
    ("state", "#/$defs/step/properties/detail"): MAX_MESSAGE,
    ("state", "#/$defs/convergenceRun/properties/message"): MAX_CONVERGENCE_MESSAGE,
    ("report", "#/properties/modelCache/properties/message"): MAX_MESSAGE,
    ("report", "#/properties/network/properties/message"): MAX_MESSAGE,
    ("report", "#/properties/operation/oneOf/1/properties/message"): MAX_MESSAGE,
    ("plan", "#/$defs/plan/properties/message"): MAX_MESSAGE,
    ("plan", "#/$defs/experiment/properties/message"): MAX_MESSAGE,
    ("plan", "#/$defs/gpuMemory/properties/message"): MAX_MESSAGE,
    ("network", "#/$defs/network/properties/message"): MAX_MESSAGE,
    ("nvidia-health", "#/properties/message"): MAX_MESSAGE,
    ("network-trial", "#/properties/message"): MAX_MESSAGE,
    ("journal", "#/properties/message"): None,
    ("history", "#/properties/journalError"): None,
    ("history", "#/$defs/row/properties/message"): None,
    ("status", "#/properties/stateError"): None,
    ("status", "#/properties/conditions/items/properties/message"): None,
    ("status", "#/properties/conditions/items/properties/advice"): None,
    ("status", "#/properties/operation/oneOf/1/properties/statusRefused"): None,
    ("inspect", "#/properties/amdDriverReady/properties/reason"): None,
    ("inspect", "#/properties/unknowns/items/properties/reason"): None,
    ("legacy-state", "#/$defs/current/properties/message"): None,
}


def text_fields(node: Any, pointer: str = "#") -> dict[str, int | None]:
    found: dict[str, int | None] = {}
    if isinstance(node, dict):
        for name, sub in (node.get("properties") or {}).items():
            if name in TEXT_FIELDS and isinstance(sub, dict):
                found[f"{pointer}/properties/{name}"] = sub.get("maxLength")
        for key, sub in node.items():
            found.update(text_fields(sub, f"{pointer}/{key}"))
    elif isinstance(node, list):
        for n, sub in enumerate(node):
            found.update(text_fields(sub, f"{pointer}/{n}"))
    return found


def test_the_limits_are_the_schemas_maxlength_in_one_table() -> None:
    found = {
        (path.name.removesuffix(".schema.json"), pointer): limit
        for path in sorted(SCHEMAS.glob("*.schema.json"))
        for pointer, limit in text_fields(json.loads(path.read_text())).items()
    }
    assert found == LIMITS
    assert convergence_run.MAX_MESSAGE == MAX_CONVERGENCE_MESSAGE


def test_the_hostoperation_status_message_is_bounded_as_the_report_is() -> None:
    crd = yaml.safe_load(CRD.read_text())
    (version,) = crd["spec"]["versions"]
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    assert status["message"]["maxLength"] == MAX_MESSAGE


# ---- clip_message ------------------------------------------------------------------------

# any code point, lone surrogates too (a path that is not UTF-8, decoded with surrogateescape),
# and astral characters (two UTF-16 units, four UTF-8 bytes: one code point for maxLength)
CHARS = st.one_of(
    st.characters(exclude_categories=()),
    st.sampled_from("aé€😀\x00\n"),
)
ANY_TEXT = st.text(CHARS, max_size=5000)
SURROGATE = st.characters(categories=["Cs"])
LONG_TEXT = st.one_of(
    ANY_TEXT,
    st.builds(lambda a, lone, b: a + lone + b, ANY_TEXT, SURROGATE, ANY_TEXT),
    st.builds(lambda unit, n: unit * n, st.text(CHARS, min_size=1, max_size=3),
              st.integers(0, 3000)),
)


@given(LONG_TEXT, st.sampled_from([MAX_MESSAGE, MAX_STATUS_REFUSED, 1, 2, 10]))
def test_a_clipped_text_fits_is_utf8_and_is_clipped_once(text: str, limit: int) -> None:
    clipped = clip_message(text, limit)
    assert len(clipped) <= limit
    clipped.encode("utf-8")  # never a lone surrogate, never half a character
    assert clip_message(clipped, limit) == clipped
    encodable = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if len(encodable) <= limit:
        assert clipped == encodable
    else:
        assert clipped.endswith("…") and encodable.startswith(clipped[:-1])


def test_a_path_that_is_not_utf8_is_shown_by_its_escapes() -> None:
    name = b"/var/lib/magicstick-host/\xff\xfe".decode("utf-8", "surrogateescape")
    shown = clip_message(f"archived to {name}")
    assert shown == "archived to /var/lib/magicstick-host/\\udcff\\udcfe"


# ---- the documents made from outside text ------------------------------------------------

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


@cache
def inspection_of_a_sim_host(tmp: str) -> dict[str, Any]:
    create_host("strix-halo-ubuntu-26.04-ready", Path(tmp) / "host")
    return app.inspect_host(str(Path(tmp) / "host"), None)


def report_problems(report: dict[str, Any]) -> list[str]:
    return schemas.errors("report", report)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message=LONG_TEXT, refused=LONG_TEXT, detail=LONG_TEXT, why=LONG_TEXT)
def test_the_state_made_from_any_text_matches_its_schema(
    message: str, refused: str, detail: str, why: str
) -> None:
    base = a_state().operation
    assert base is not None
    step = replace(base.steps[0], outcome="failed", finished_at="2026-05-09T07:00:02Z",
                   detail=detail)
    op = replace(base, message=message, status_refused=refused, steps=(step,))
    state = State(operation=op, block=Block("state-corrupt", why, "2026-05-09T07:00:03Z"))
    assert document_errors(state.to_json()) == []
    # and the lifecycle's own transitions, e.g. a failed step quoting a command's stderr
    touched = lifecycle.touch_message(op, why, wall=NOW)
    assert document_errors(State(operation=touched).to_json()) == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message=LONG_TEXT, why=LONG_TEXT, problem=LONG_TEXT)
def test_the_report_made_from_any_text_matches_its_schema(
    tmp_path_factory: Any, message: str, why: str, problem: str
) -> None:
    inspection = dict(inspection_of_a_sim_host(str(tmp_path_factory.getbasetemp())))
    inspection["modelCache"] = model_cache_section(
        CacheInventory(roots=(), problem=problem), Blockers(error=why), node_uid="uid-1"
    )
    base = a_state().operation
    assert base is not None
    working = State(operation=replace(base, message=message))
    report = build_report(inspection, node_uid="uid-1", state=working, observed_at=NOW)
    assert report_problems(report) == []
    blocked = State(operation=base, block=Block("state-corrupt", why, "2026-12-01T12:00:00Z"))
    report = build_report(inspection, node_uid="uid-1", state=blocked, observed_at=NOW)
    assert report_problems(report) == []
    assert report["operation"]["blocked"] == "state-corrupt"


@settings(max_examples=60, deadline=None)
@given(message=LONG_TEXT, why=LONG_TEXT)
def test_the_hostoperation_status_made_from_any_text_fits_the_crd(message: str, why: str) -> None:
    base = a_state().operation
    assert base is not None
    rejected = rejection_status(Rejected("u", "a" * 32, "reboot", why), at="t", boot_id="b")
    for status in (lifecycle.status_of(replace(base, message=message)), rejected):
        assert len(status["message"]) <= MAX_MESSAGE
        json.dumps(status, ensure_ascii=False).encode("utf-8")


def test_the_same_long_waiting_message_does_not_touch_the_operation_again() -> None:
    """A wait quoting a long text each tick: once clipped, the same text changes nothing, so
    the status is not rewritten every tick for a new `updatedAt`."""
    base = a_state().operation
    assert base is not None
    waiting = "Waiting for the device plugin: " + "x" * 3000
    once = lifecycle.touch_message(base, waiting, wall=NOW)
    assert len(once.message) == MAX_MESSAGE
    again = lifecycle.touch_message(once, waiting, wall=datetime(2026, 12, 1, 13, tzinfo=UTC))
    assert again is once
