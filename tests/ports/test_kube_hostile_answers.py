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
from magicstick_host.ports.http_response import BadResponse, read_response
from magicstick_host.ports.kube import RealKube
from tests.kubeserver.fixtures import KubeCluster
from tests.ports.kube_servers import Server, answer, kubeconfig_for, serving

BAD_STATUSES = ["²00", "¹00", "٢٠٠", "099", "000", "2O0", "+20", "-20"]
BAD_LENGTHS = ["¹", "١٢", "²", "+1", "-1", "1_0", " "]


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
        read_response(io.BufferedReader(io.BytesIO(data)), "GET", 64)
    # http.client refuses them too
    sock = _FakeSocket(data)
    response = http.client.HTTPResponse(sock)  # type: ignore[arg-type]
    with pytest.raises(http.client.HTTPException):
        response.begin()


@pytest.mark.parametrize("length", BAD_LENGTHS)
def test_a_content_length_that_is_not_ascii_digits_is_bad_response(length: str) -> None:
    data = on_the_wire(f"HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\n1")
    with pytest.raises(BadResponse):
        read_response(io.BufferedReader(io.BytesIO(data)), "GET", 64)


def test_status_100_and_999_are_read() -> None:
    data = b"HTTP/1.1 999 Odd\r\nContent-Length: 2\r\n\r\n{}"
    assert read_response(io.BufferedReader(io.BytesIO(data)), "GET", 64).status == 999


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
    "superscript-length": (b"HTTP/1.1 200 OK\r\nContent-Length: \xb9\r\n\r\n{", KubeTemporaryError),
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
