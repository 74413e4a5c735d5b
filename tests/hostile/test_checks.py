"""The hostile suite's own checks can fail: each rule is shown a violation (a suite whose checks
cannot fail would pass whatever the worker does), and the seeds cover every kind."""

from __future__ import annotations

import json
import os
import secrets
import signal
import sys
import time

import pytest

from tests.hostile import cases
from tests.hostile.answers import BODY_KINDS, HEAD_KINDS, body_plan, head_plan
from tests.hostile.checks import (
    RSS_BOUND_BYTES,
    Run,
    effect_violations,
    run_violations,
    write_violations,
)
from tests.hostile.proxy import Exchange
from tests.hostile.rig import _POPEN, run_cli
from tests.hostile.test_tools import leftovers, processes_with


def run(code: int = 0, wall: float = 1.0, rss: int = 50 * 2**20) -> Run:
    return Run("t", [], code, wall, rss, b"", "")


def test_a_run_is_held_to_its_exit_code_time_and_memory() -> None:
    assert run_violations(run(0), {0}) == []
    assert run_violations(run(5), {0, 5}) == []
    assert any("70" in v for v in run_violations(run(70), {0, 70}))
    assert any("signal 9" in v for v in run_violations(run(-9), {0}))
    assert any("not a documented" in v for v in run_violations(run(1), {0, 1}))
    assert any("expected" in v for v in run_violations(run(4), {0, 5}))
    assert any("took" in v for v in run_violations(run(0, wall=31.0), {0}))
    assert any("RSS" in v for v in run_violations(run(0, rss=RSS_BOUND_BYTES + 1), {0}))


def status_patch(tick: str, rv: str, phase: str, upstream: int | None,
                 hostile: bool = False) -> Exchange:
    body = json.dumps({"metadata": {"resourceVersion": rv}, "status": {"phase": phase}})
    return Exchange(tick, "PATCH", "/apis/g/v1/namespaces/n/hostoperations/h/status",
                    body.encode(), upstream, hostile)


def test_no_write_twice() -> None:
    node = Exchange("1", "PATCH", "/api/v1/nodes/n", b'{"a":1}', 200, False)
    assert write_violations([node]) == ([], [])
    # the identical write twice in one tick
    violations, _ = write_violations([node, node])
    assert violations and "sent 2 times" in violations[0]
    # the same Secret DELETE in two ticks
    delete = Exchange("1", "DELETE", "/api/v1/namespaces/n/secrets/s", b"", 200, False)
    later = Exchange("2", "DELETE", "/api/v1/namespaces/n/secrets/s", b"", 404, False)
    violations, _ = write_violations([delete, later])
    assert violations and "DELETE" in violations[0]
    # a status sent again after a clean 2xx, with another resourceVersion
    violations, _ = write_violations([status_patch("2", "10", "Succeeded", 200),
                                      status_patch("3", "11", "Succeeded", 200)])
    assert violations and "clean 200" in violations[0]
    # ... after an answer the worker could not read: an observation, not a violation
    violations, observations = write_violations([
        status_patch("2", "10", "Succeeded", 200, hostile=True),
        status_patch("3", "11", "Succeeded", 200)])
    assert violations == [] and observations
    # another transition is another write
    assert write_violations([status_patch("1", "9", "RebootScheduled", 200),
                             status_patch("2", "10", "Succeeded", 200)]) == ([], [])


def test_no_effect_twice() -> None:
    shutdown = {"effect": "shutdown", "argv": ["shutdown", "-r", "+1"], "bootId": "b"}
    assert effect_violations([shutdown]) == []
    assert effect_violations([shutdown, dict(shutdown)])


def test_every_kind_runs_with_the_default_seeds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cases.SEED_ENV, raising=False)
    monkeypatch.delenv(cases.CASES_ENV, raising=False)
    from tests.hostile import (
        test_cluster_objects,
        test_long_paths,
        test_memos,
        test_tools,
    )

    families = {
        "answers": (BODY_KINDS, 4), "http": ((*HEAD_KINDS, "http-scheme"), 5),
        "cluster-objects": (test_cluster_objects.KINDS, 2), "tools": (test_tools.KINDS, 2),
        "memos": (test_memos.KINDS, 2), "long-paths": (test_long_paths.CORRUPTIONS, 3),
    }
    for family, (kinds, per_seed) in families.items():
        generated = cases.generate(family, kinds, per_seed)
        assert {c.kind for c in generated} == set(kinds), family
        assert len({c.id for c in generated}) == len(generated), family


def test_seeds_and_counts_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cases.SEED_ENV, "5, 6")
    monkeypatch.setenv(cases.CASES_ENV, "3")
    generated = cases.generate("answers", BODY_KINDS, 1)
    assert [(c.seed, c.index) for c in generated] == [(5, 0), (5, 1), (5, 2), (6, 0), (6, 1),
                                                      (6, 2)]
    again = cases.generate("answers", BODY_KINDS, 1)
    assert [c.rng().random() for c in generated] == [c.rng().random() for c in again]
    # the printed command makes the same case: the same kind, seed, index and draws
    command = generated[4].reproduce()
    assert "MAGICSTICK_HOSTILE_SEED=5,6 MAGICSTICK_HOSTILE_CASES=3" in command
    assert generated[4].id in command


def test_the_same_seed_makes_the_same_answers() -> None:
    from tests.hostile.cases import Case
    from tests.soak.httpio import Message

    request = Message(b"GET /api/v1/nodes/x HTTP/1.1\r\n\r\n", "GET /api/v1/nodes/x HTTP/1.1",
                      {})
    for kind in BODY_KINDS:
        case = Case("answers", kind, 1, 0)
        one, two = body_plan(kind, case.rng()), body_plan(kind, case.rng())
        assert one.label == two.label
        first = b"".join(one.answer(request, None))
        assert first == b"".join(two.answer(request, None)) and first
    for kind in HEAD_KINDS:
        case = Case("http", kind, 1, 0)
        one, two = head_plan(kind, case.rng()), head_plan(kind, case.rng())
        if kind == "endless-interim":
            continue
        assert b"".join(one.answer(request, None)) == b"".join(two.answer(request, None))


@pytest.mark.real_commands
def test_the_rss_and_time_of_a_run_are_measured() -> None:
    hungry = run_cli("hungry", [sys.executable, "-c",
                                "b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096])"])
    assert hungry.exit_code == 0 and hungry.maxrss_bytes > 290 * 2**20, hungry.summary()
    assert any("RSS" in v for v in run_violations(hungry, {0}))
    slow = run_cli("slow", [sys.executable, "-c", "import time; time.sleep(60)"], limit_s=1.0)
    assert slow.killed_at_limit and slow.exit_code == -signal.SIGKILL


@pytest.mark.real_commands
def test_a_leftover_process_is_found_by_its_marker() -> None:
    marker = f"hostile-marker-{secrets.token_hex(4)}"
    proc = _POPEN([sys.executable, "-c", "import time; time.sleep(60)", marker])
    try:
        time.sleep(0.2)
        assert proc.pid in processes_with(marker)
        assert proc.pid in leftovers(marker)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.pid not in processes_with(marker)


def test_the_first_case_of_a_kind_is_the_input_the_issue_names() -> None:
    from tests.hostile.cases import Case
    from tests.soak.httpio import Message

    request = Message(b"GET /api/v1/nodes/x HTTP/1.1\r\n\r\n", "GET /api/v1/nodes/x HTTP/1.1",
                      {})

    def made(plan_of: object, kind: str) -> bytes:
        plan = plan_of(kind, Case("x", kind, 1, 0, True).rng(), True)  # type: ignore[operator]
        assert plan.match is None and plan.at == 0  # the tick's first request
        pieces = plan.answer(request, None)
        return b"".join(next(pieces) for _ in range(3)) if kind == "endless-interim" \
            else b"".join(pieces)

    assert made(body_plan, "deep-open").endswith(b"\r\n\r\n" + b"[" * 200_000)
    assert made(head_plan, "status-superscript").startswith(b"HTTP/1.1 \xb200 OK\r\n")
    assert made(head_plan, "status-odd-code").startswith(b"HTTP/1.1 099 ")
    assert made(head_plan, "status-no-reason").startswith(b"HTTP/1.1 200\r\n")
    assert b"\r\nContent-Length: \xb9\r\n" in made(head_plan, "cl-superscript")
    assert b"\r\nContent-Length: -1\r\n" in made(head_plan, "cl-negative")
    assert b"\r\nX-Junk: " + b"a" * 2**20 + b"\r\n" in made(head_plan, "header-1mib")
    assert made(head_plan, "headers-10k").count(b"\r\nX-H") == 10_000
    assert made(head_plan, "endless-interim").startswith(b"HTTP/1.1 100 Continue\r\n\r\n" * 3)
