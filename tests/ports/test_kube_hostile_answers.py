"""Answers a hostile server (or a proxy in front of the apiserver) may send, and a kubeconfig
that would send the token in clear text (issue #24: N1, N2, N7). Each is a classified error
(KubeTemporaryError: exit 5, "cannot tell"; KubeConfigError: exit 3), never another
exception, and an http:// server gets not one byte from the lean transport."""

from __future__ import annotations

import http.client
import io
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from magicstick_host.errors import (
    ExitCode,
    KubeConfigError,
    KubeTemporaryError,
    KubeUnreadableError,
)
from magicstick_host.ports.kube import RealKube
from magicstick_host.ports.kube_http import BadResponse, read_response
from tests.kubeserver.fixtures import KubeCluster
from tests.ports.kube_servers import Server, answer, kubeconfig_for, serving

BAD_STATUSES = ["²00", "¹00", "٢٠٠", "099", "000", "2O0", "+20", "-20", "abc"]
# Content-Length values that are not plain ASCII digits, with a body of b"1" and the server's
# close after it, and what http.client makes of them (int() of the first field; a value it
# cannot read, or a negative one, frames the body by the close): the body read and whether
# the connection is kept, or BadResponse for a body shorter than the length
LENGTHS: dict[str, tuple[bytes, bool] | type[BadResponse]] = {
    "¹": (b"1", False), "١٢": (b"1", False), "²": (b"1", False), " ": (b"1", False),
    "+1": (b"1", True), "-1": (b"1", False), "1_0": BadResponse, " 1 ": (b"1", True),
}


def on_the_wire(text: str) -> bytes:
    """Latin-1 where it can be (one byte per character: "²" is 0xB2, as a header reader
    decodes it back), else UTF-8."""
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


@pytest.mark.parametrize("status", BAD_STATUSES)
def test_a_status_that_is_not_three_ascii_digits_from_100_is_bad_response(status: str) -> None:
    data = on_the_wire(f"HTTP/1.1 {status} OK\r\nContent-Length: 0\r\n\r\n")
    with pytest.raises(BadResponse):
        read_response(io.BytesIO(data), "GET", 64)
    # because http.client refuses them
    sock = _FakeSocket(data)
    response = http.client.HTTPResponse(sock)  # type: ignore[arg-type]
    with pytest.raises(http.client.BadStatusLine):
        response.begin()
    response.close()


@pytest.mark.parametrize("length", sorted(LENGTHS))
def test_a_content_length_that_is_not_ascii_digits_is_read_as_http_client_reads_it(
        length: str) -> None:
    data = on_the_wire(f"HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\n1")
    expected = LENGTHS[length]
    response = http.client.HTTPResponse(_FakeSocket(data))  # type: ignore[arg-type]
    response.begin()
    if expected is BadResponse:
        with pytest.raises(BadResponse):
            read_response(io.BytesIO(data), "GET", 64)
        with pytest.raises(http.client.IncompleteRead):
            response.read()
        response.close()
        return
    ours = read_response(io.BytesIO(data), "GET", 64)
    assert (ours.status, ours.body, ours.reusable) == (200, *expected)
    assert response.read() == expected[0]
    response.close()


def test_status_999_and_an_answer_after_100_continue_are_read() -> None:
    data = b"HTTP/1.1 999 Odd\r\nContent-Length: 2\r\n\r\n{}"
    assert read_response(io.BytesIO(data), "GET", 64).status == 999
    # 100 Continue is followed by the answer itself
    data = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}"
    assert read_response(io.BytesIO(data), "GET", 64).status == 201


class _FakeSocket:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(io.BytesIO(self.data))


# -- through the port, from a TLS server with the apiserver's certificate -------------------

NESTED = b'{"a":' * 2000 + b"1" + b"}" * 2000


def answering(raw: bytes):  # type: ignore[no-untyped-def]
    def behaviour(server: Server, conn: socket.socket) -> None:
        tls = server.handshake(conn)
        server.read_request(tls)
        tls.sendall(raw)
    return behaviour


HOSTILE = {
    "superscript-status": (b"HTTP/1.1 \xb200 OK\r\nContent-Length: 2\r\n\r\n{}",
                           KubeTemporaryError),
    "status-099": (b"HTTP/1.1 099 OK\r\nContent-Length: 2\r\n\r\n{}", KubeTemporaryError),
    # http.client cannot read the length, so the body is what comes before the close: "{",
    # which is not JSON (it was KubeTemporaryError from our own reader, which refused it)
    "superscript-length": (b"HTTP/1.1 200 OK\r\nContent-Length: \xb9\r\n\r\n{",
                           KubeUnreadableError),
    "nested-2000": (answer(NESTED), KubeUnreadableError),
    "brackets-200000": (answer(b"[" * 200_000), KubeUnreadableError),
    "a-list-not-an-object": (answer(b"[1]"), KubeUnreadableError),
    "nan": (answer(b'{"a": NaN}'), KubeUnreadableError),
    "error-body-nested-2000": (answer(NESTED, "500 Internal Server Error"), KubeTemporaryError),
    "not-utf8": (answer(b'{"a": "\xff"}'), KubeUnreadableError),
}


@pytest.mark.apiserver
@pytest.mark.parametrize("transport", ["lean", "official"])
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_answer_is_cannot_tell_on_both_transports(
    tmp_path: Path, kube: KubeCluster, transport: str, case: str
) -> None:
    raw, expected = HOSTILE[case]
    certs = kube.server.ca_file.parent
    with serving(certs, answering(raw)) as server:
        cfg = kubeconfig_for(tmp_path / "kubeconfig", f"https://127.0.0.1:{server.port}",
                             certs / "apiserver.crt")
        port = RealKube(str(cfg), timeout=5, transport=transport)
        with pytest.raises(expected) as caught:
            port.read_node("x")
    assert type(caught.value) is expected  # KubeUnreadableError is a KubeTemporaryError
    assert caught.value.exit_code == ExitCode.KUBE_UNAVAILABLE
    assert "\n" not in str(caught.value)


# -- N7: no clear text from the lean transport ---------------------------------------------


@contextmanager
def plain_serving(tmp: Path, behaviour: Callable[[Server, socket.socket], None]
                  ) -> Iterator[Server]:
    """A plain-TCP listener that records whatever arrives."""
    server = Server(tmp, behaviour, tls=False)
    acceptor = threading.Thread(target=server.serve, daemon=True)
    acceptor.start()
    try:
        yield server
    finally:
        server.stop.set()
        server.listener.close()
        acceptor.join(5)
        for thread in server.threads:
            thread.join(5)


@pytest.mark.parametrize("transport", ["auto", "lean"])
@pytest.mark.parametrize("suffix", ["", "/", "/k8s"])
def test_an_http_server_is_refused_before_any_byte_is_sent(
    tmp_path: Path, transport: str, suffix: str
) -> None:
    def records(server: Server, conn: socket.socket) -> None:
        conn.settimeout(2)
        server.requests.append(conn.recv(65536))

    with plain_serving(tmp_path, records) as server:
        cfg = kubeconfig_for(tmp_path / "kubeconfig", f"http://127.0.0.1:{server.port}{suffix}",
                             tmp_path / "no-ca.crt", token="s3cret-token")
        (tmp_path / "no-ca.crt").write_text("")
        port = RealKube(str(cfg), timeout=3, transport=transport)
        with pytest.raises(KubeConfigError) as caught:
            port.read_node("x")
        accepted, received = server.accepted, b"".join(server.requests)
    assert caught.value.exit_code == ExitCode.BAD_INPUT
    assert "is not an https:// URL" in str(caught.value)
    assert "TLS" in str(caught.value)
    assert accepted == 0 and b"s3cret-token" not in received


def test_the_official_transport_reads_no_more_than_the_limit_of_a_huge_body() -> None:
    """A hostile server's endless body is cut at the limit (+1 byte to see it is over), not
    read whole into the tick's memory, for both shapes the two client lines return."""
    from magicstick_host.ports import kube_official
    from magicstick_host.ports.kube_http import MAX_BODY_BYTES

    class Wrapped:  # the newer client: a RESTResponse over the urllib3 answer
        def __init__(self, stream: io.BytesIO) -> None:
            self.response = stream

    for shape in (lambda s: s, Wrapped):
        stream = io.BytesIO(b" " * (MAX_BODY_BYTES + 4096))
        with pytest.raises(KubeTemporaryError, match="larger than"):
            kube_official._bounded_body(shape(stream))
        assert stream.tell() == MAX_BODY_BYTES + 1
    assert kube_official._bounded_body(io.BytesIO(b"{}")) == b"{}"
