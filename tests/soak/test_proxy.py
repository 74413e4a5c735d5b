"""The fault proxy does each fault it is armed with, against the real apiserver (a proxy that
never injects would make a soak that cannot fail)."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.soak.pki import make_proxy_ca, upstream_of
from tests.soak.proxy import ApiFault, FaultProxy

pytestmark = [pytest.mark.apiserver, pytest.mark.real_commands]  # openssl makes the proxy CA


CONTEXTS: dict[int, ssl.SSLContext] = {}
TOKENS: dict[int, str] = {}


def proxy_context(proxy: FaultProxy) -> ssl.SSLContext:
    return CONTEXTS[proxy.port]


@pytest.fixture
def proxied(kube: Any, tmp_path: Path) -> Iterator[tuple[FaultProxy, Any]]:
    ca, cert, key = make_proxy_ca(tmp_path / "pki")
    worker = kube.server.kubeconfig("worker")
    proxy = FaultProxy(upstream_of(worker, tmp_path / "up"), cert, key)
    proxy.start()
    token = json.loads(worker.read_text())["users"][0]["user"]["token"]
    context = ssl.create_default_context(cafile=str(ca))
    CONTEXTS[proxy.port] = context
    TOKENS[proxy.port] = token

    def get(timeout: float = 5.0) -> tuple[int, bytes]:
        conn = http.client.HTTPSConnection("127.0.0.1", proxy.port, context=context,
                                           timeout=timeout)
        try:
            conn.request("GET", "/api/v1/nodes", headers={"Authorization": f"Bearer {token}"})
            answer = conn.getresponse()
            return answer.status, answer.read()
        finally:
            conn.close()

    try:
        yield proxy, get
    finally:
        proxy.stop()


def test_unarmed_it_passes_every_request_through(proxied: tuple[FaultProxy, Any]) -> None:
    proxy, get = proxied
    status, body = get()
    assert status == 200 and json.loads(body)["kind"] == "NodeList"
    assert proxy.disarm() == 0


@pytest.mark.parametrize(("fault", "code"), [
    (ApiFault("5xx", code=503), 503), (ApiFault("401"), 401), (ApiFault("403"), 403)])
def test_status_faults_answer_as_the_apiserver_would(
        proxied: tuple[FaultProxy, Any], fault: ApiFault, code: int) -> None:
    proxy, get = proxied
    proxy.arm(fault)
    status, body = get()
    assert status == code and json.loads(body)["kind"] == "Status"
    assert proxy.disarm() == 1


def test_after_and_once_choose_which_requests_fail(proxied: tuple[FaultProxy, Any]) -> None:
    proxy, get = proxied
    proxy.arm(ApiFault("5xx", after=1, once=True, code=500))
    assert [get()[0] for _ in range(3)] == [200, 500, 200]
    proxy.arm(ApiFault("403", after=1))
    assert [get()[0] for _ in range(3)] == [200, 403, 403]
    assert proxy.disarm() == 2


def test_a_reset_drops_the_connection(proxied: tuple[FaultProxy, Any]) -> None:
    proxy, get = proxied
    proxy.arm(ApiFault("reset"))
    with pytest.raises((ConnectionError, http.client.RemoteDisconnected, ssl.SSLError)):
        get()
    assert proxy.disarm() == 1


def test_a_blackhole_never_answers(proxied: tuple[FaultProxy, Any]) -> None:
    proxy, get = proxied
    proxy.arm(ApiFault("blackhole"))
    with pytest.raises(TimeoutError):
        get(timeout=1.5)
    assert proxy.disarm() == 1


def test_a_slow_drip_sends_one_byte_every_two_seconds(proxied: tuple[FaultProxy, Any]) -> None:
    proxy, get = proxied
    proxy.arm(ApiFault("slow-drip"))
    # a per-read timeout longer than the drip never fires: exactly the worker's old defect
    with pytest.raises(TimeoutError):
        get(timeout=1.0)
    proxy.arm(ApiFault("slow-drip"))
    got = b""
    with socket.create_connection(("127.0.0.1", proxy.port)) as raw, \
            proxy_context(proxy).wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        tls.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
        deadline = time.monotonic() + 4.5
        while (left := deadline - time.monotonic()) > 0:
            tls.settimeout(left)
            try:
                got += tls.recv(100)
            except TimeoutError:
                break
    assert b"HTTP/1.1 200 OK".startswith(got) and 2 <= len(got) <= 4, got
    assert proxy.disarm() == 1


def test_a_restart_refuses_connections_for_a_while(proxied: tuple[FaultProxy, Any]) -> None:
    proxy, get = proxied
    proxy.arm(ApiFault("restart", down_s=2.0))
    with pytest.raises((ConnectionError, http.client.RemoteDisconnected, ssl.SSLError)):
        get()
    with pytest.raises(ConnectionRefusedError):
        get()
    time.sleep(2.5)
    assert get()[0] == 200
    proxy.disarm()


def _raw_get(proxy: FaultProxy, token: str) -> bytes:
    """Everything the proxy sends back for one GET, up to the connection's close."""
    raw = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
    with proxy_context(proxy).wrap_socket(raw, server_hostname="127.0.0.1") as conn:
        conn.sendall(b"GET /api/v1/nodes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                     + token.encode() + b"\r\n\r\n")
        out = bytearray()
        while True:
            try:
                data = conn.recv(1 << 20)
            except (OSError, ssl.SSLError):
                break
            if not data:
                break
            out += data
        return bytes(out)


@pytest.mark.parametrize(("kind", "starts", "inside"), [
    ("deep-open", b"HTTP/1.1 200 OK", b"[" * 1000),
    ("deep-2000", b"HTTP/1.1 200 OK", b"1" + b"}" * 2000),
    ("not-an-object", b"HTTP/1.1 200 OK", b'[{"kind":"NodeList"'),
    ("status-superscript", b"HTTP/1.1 \xb200 OK", b"NodeList"),
    ("status-099", b"HTTP/1.1 099 Early", b"NodeList"),
    ("cl-superscript", b"HTTP/1.1 200 OK", b"Content-Length: \xb9\r\n"),
    ("header-flood", b"HTTP/1.1 200 OK", b"X-H9999: v\r\n"),
])
def test_each_hostile_answer_replaces_the_apiservers(
        proxied: tuple[FaultProxy, Any], kind: str, starts: bytes, inside: bytes) -> None:
    proxy, _ = proxied
    proxy.arm(ApiFault(kind))
    answer = _raw_get(proxy, TOKENS[proxy.port])
    assert proxy.disarm() == 1
    assert answer.startswith(starts) and inside in answer, answer[:300]


def test_the_huge_answer_is_33_mib_streamed(proxied: tuple[FaultProxy, Any]) -> None:
    proxy, _ = proxied
    proxy.arm(ApiFault("huge-33mib"))
    answer = _raw_get(proxy, TOKENS[proxy.port])
    assert proxy.disarm() == 1
    head, _, body = answer.partition(b"\r\n\r\n")
    assert f"Content-Length: {33 * 2**20}".encode() in head
    assert len(body) == 33 * 2**20 and body.startswith(b'{"pad":"x') and body.endswith(b'x"}')
