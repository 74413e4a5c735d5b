"""Families 2 and 3: hostile bodies and malformed HTTP from the apiserver's side, through the
fault proxy, during the tick that must complete a reboot locally.

Per case: a clean tick schedules the requested reboot, the simulated host boots and the kubelet
reports it; then the hostile tick, with the proxy answering the request(s) the case picks with
the case's bytes (after forwarding it: a write arrives, its answer is garbage). That tick must
exit with a documented code (0 or 5), never 70, within 30 s and 200 MB, and complete the
reboot in the state file and the journal. Then a clean tick: exit 0 and the HostOperation's
status is Succeeded (the worker recovers once the answers are sane). Over the whole case no
write is sent twice and no effect happens twice.

An `http://` server in the kubeconfig is its own case: a recording listener stands at that
address; the worker's bearer token must never arrive there.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import cases
from tests.hostile.answers import BODY_KINDS, HEAD_KINDS, body_plan, head_plan
from tests.hostile.cases import Case
from tests.hostile.checks import Verdict
from tests.hostile.proxy import Plan, Recorder
from tests.hostile.rig import Rig

pytestmark = [pytest.mark.apiserver, pytest.mark.real_commands, pytest.mark.slow]

HOSTILE_EXITS = {0, 5}


def reboot_through(make_rig: Callable[..., Rig], case: Case, plan: Plan) -> None:
    verdict = Verdict(case)
    rig = make_rig(verdict)
    if rig.schedule_reboot():
        rig.boot()
        rig.tick("tick-2 (hostile)", HOSTILE_EXITS, plan=plan)
        rig.check_reboot_completed("tick-2 (hostile)")
        rig.tick("tick-3 (clean)", {0})
        status = (rig.hostop() or {}).get("status") or {}
        verdict.expect(status.get("phase") == "Succeeded",
                       f"tick-3 (clean): the HostOperation's status is {status.get('phase')!r}, "
                       "not Succeeded, after a clean tick")
        rig.check_no_duplicates()
    verdict.done()


@cases.parametrize("answers", BODY_KINDS, 4)
def test_hostile_answer_bodies(case: Case, make_rig: Callable[..., Rig]) -> None:
    reboot_through(make_rig, case, body_plan(case.kind, case.rng(), case.canonical))


@cases.parametrize("http", (*HEAD_KINDS, "http-scheme"), 5)
def test_malformed_http(case: Case, make_rig: Callable[..., Rig], tmp_path: Path) -> None:
    if case.kind == "http-scheme":
        plain_http_kubeconfig(case, make_rig, tmp_path)
        return
    reboot_through(make_rig, case, head_plan(case.kind, case.rng(), case.canonical))


def plain_http_kubeconfig(case: Case, make_rig: Callable[..., Rig], tmp_path: Path) -> None:
    """The kubeconfig names an http:// server: the lean client must refuse it without sending
    the token (exit 3, a bad kubeconfig, or 5), and the reboot still completes locally."""
    import json

    rng = case.rng()
    verdict = Verdict(case)
    rig = make_rig(verdict)
    with Recorder() as listener:
        doc: dict[str, Any] = json.loads(rig.kubeconfig.read_text())
        cluster = doc["clusters"][0]["cluster"]
        host = rng.choice(["127.0.0.1", "localhost"])
        suffix = rng.choice(["", "/", "/k8s"])
        cluster["server"] = f"http://{host}:{listener.port}{suffix}"
        if rng.random() < 0.5:
            cluster.pop("certificate-authority-data", None)
        plain = tmp_path / "plain-http.kubeconfig"
        plain.write_text(json.dumps(doc))
        plain.chmod(0o600)
        verdict.note(f"kubeconfig server {cluster['server']}")
        if rig.schedule_reboot():
            rig.boot()
            rig.tick("tick-2 (http:// kubeconfig)", {3, 5}, kubeconfig=plain)
            rig.check_reboot_completed("tick-2 (http:// kubeconfig)")
            connections, received = listener.snapshot()
            verdict.expect(rig.pki.token.encode() not in received,
                           f"the bearer token was sent in clear text to {cluster['server']} "
                           f"({connections} connection(s), {len(received)} bytes: "
                           f"{received[:200]!r})")
            verdict.note(f"the http:// listener got {connections} connection(s), "
                         f"{len(received)} bytes")
            rig.check_no_duplicates()
    verdict.done()
