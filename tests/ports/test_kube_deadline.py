"""Every Kubernetes call ends by its deadline, whatever the server does (issue 10).

The servers here drip one byte every 2 s, so a timeout per socket read never fires: before the
deadlines, such a call took minutes. The bounds asserted are generous (they tell "returned"
from "hung"), not a benchmark.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from magicstick_host.errors import KubeTemporaryError
from magicstick_host.ports.kube import RealKube
from tests.kubeserver.fixtures import KubeCluster
from tests.ports.kube_servers import (
    Server,
    answers_keeping_alive,
    answers_then_closes_idle,
    call_in_thread,
    drips_the_body,
    drops_the_second_request,
    kubeconfig_for,
    never_answers,
    serving,
    trickles_headers,
)

pytestmark = pytest.mark.apiserver  # the servers use the test apiserver's certificate

# far above every deadline below, far below what the drips would take without them
RETURNED_WITHIN_S = 30.0


@pytest.fixture
def certs(kube: KubeCluster) -> Path:
    return kube.server.ca_file.parent


def port_for(tmp_path: Path, certs: Path, server: Server, transport: str,
             timeout: float = 3.0, budget_s: float | None = None) -> RealKube:
    cfg = kubeconfig_for(tmp_path / "kubeconfig", f"https://127.0.0.1:{server.port}",
                         certs / "apiserver.crt")
    return RealKube(str(cfg), timeout=timeout, budget_s=budget_s, transport=transport)


@pytest.mark.parametrize("transport", ["lean", "official"])
@pytest.mark.parametrize("behaviour", [never_answers, drips_the_body, trickles_headers],
                         ids=["never-answers", "drips-the-body", "trickles-headers"])
def test_a_call_to_a_stalling_server_ends_at_its_timeout(
    tmp_path: Path, certs: Path, transport: str, behaviour: object
) -> None:
    with serving(certs, behaviour) as server:  # type: ignore[arg-type]
        port = port_for(tmp_path, certs, server, transport)
        returned, raised = call_in_thread(lambda: port.read_node("x"), RETURNED_WITHIN_S)
    assert returned, "the call outlived its 3 s timeout by far"
    assert isinstance(raised, KubeTemporaryError), raised


def test_the_overall_budget_spans_calls_and_a_spent_budget_sends_nothing(
    tmp_path: Path, certs: Path
) -> None:
    with serving(certs, drips_the_body) as server:
        port = port_for(tmp_path, certs, server, "lean", timeout=3.0, budget_s=4.0)
        outcomes = []
        for _ in range(3):
            returned, raised = call_in_thread(lambda: port.read_node("x"), RETURNED_WITHIN_S)
            outcomes.append((returned, type(raised)))
        sent = server.accepted
    assert outcomes == [(True, KubeTemporaryError)] * 3
    # the first call spent its 3 s, the second the last second; the third was never sent
    assert sent == 2


@pytest.mark.parametrize("transport", ["lean", "official"])
def test_a_phase_budget_narrows_the_call_and_apart_escapes_a_spent_budget(
    tmp_path: Path, certs: Path, transport: str
) -> None:
    with serving(certs, drips_the_body) as server:
        port = port_for(tmp_path, certs, server, transport, timeout=60.0, budget_s=2.0)

        def within_phase() -> None:
            with port.budget(1.0):
                port.read_node("x")

        assert call_in_thread(within_phase, RETURNED_WITHIN_S)[1].__class__ is KubeTemporaryError
        # the overall 2 s budget is what it is: the 1 s phase spent part of it
        returned, raised = call_in_thread(lambda: port.read_node("x"), RETURNED_WITHIN_S)
        assert returned and isinstance(raised, KubeTemporaryError)
        before = server.accepted
        with pytest.raises(KubeTemporaryError, match="budget is used up"):
            port.read_node("x")
        assert server.accepted == before  # nothing sent

        def heartbeat() -> None:
            with port.budget(1.0, apart=True):
                port.read_node("x")

        returned, raised = call_in_thread(heartbeat, RETURNED_WITHIN_S)
        assert returned and isinstance(raised, KubeTemporaryError)
        assert server.accepted == before + 1  # sent, on its own budget


def test_one_connection_serves_the_calls_of_a_tick(tmp_path: Path, certs: Path) -> None:
    with serving(certs, answers_keeping_alive) as server:
        port = port_for(tmp_path, certs, server, "lean")
        results = [port.read_node("x") for _ in range(3)]
        accepted = server.accepted
    assert [r["metadata"]["uid"] for r in results] == ["u", "u", "u"]
    assert accepted == 1


def test_a_connection_the_server_closed_while_idle_is_replaced(
    tmp_path: Path, certs: Path
) -> None:
    import time

    with serving(certs, answers_then_closes_idle) as server:
        port = port_for(tmp_path, certs, server, "lean")
        first = port.read_node("x")
        time.sleep(1.0)  # the server closes its side after 0.3 s
        second = port.read_node("x")
        accepted = server.accepted
    assert first == second
    assert accepted == 2


def test_a_read_goes_again_on_a_new_connection_a_write_never(
    tmp_path: Path, certs: Path
) -> None:
    with serving(certs, drops_the_second_request) as server:
        port = port_for(tmp_path, certs, server, "lean")
        port.read_node("x")
        assert port.read_node("x")["metadata"]["uid"] == "u"  # dropped, asked again
        assert server.accepted == 2
        with pytest.raises(KubeTemporaryError):  # dropped: it may have arrived
            port.patch_node_annotation("x", "u", "k", "v")
        assert server.accepted == 2
        assert [r.split(b" ")[0] for r in server.requests] == [b"GET", b"GET", b"GET", b"PATCH"]
