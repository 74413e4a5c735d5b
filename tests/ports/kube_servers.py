"""Misbehaving HTTPS servers on loopback, for the deadline tests of the Kubernetes port.

Each serves with the test apiserver's own certificate (a `kube` fixture), so the port verifies
TLS as it does against the real server. A server thread stops when the test ends; it never
sends to anything but the connections it accepted on 127.0.0.1.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# one byte every DRIP_S seconds: a per-read timeout never fires, only a deadline does
DRIP_S = 2.0
OK_BODY = b'{"kind":"Node","metadata":{"name":"x","uid":"u"}}'


class Server:
    def __init__(self, certs: Path, behaviour: Callable[[Server, socket.socket], None],
                 *, tls: bool = True) -> None:
        self.behaviour = behaviour
        self.stop = threading.Event()
        self.accepted = 0
        self.requests: list[bytes] = []
        self.context: ssl.SSLContext | None = None
        if tls:
            self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.context.load_cert_chain(certs / "apiserver.crt", certs / "apiserver.key")
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = int(self.listener.getsockname()[1])
        self.threads: list[threading.Thread] = []

    def serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            thread = threading.Thread(target=self._handle, args=(conn,), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _handle(self, conn: socket.socket) -> None:
        try:
            self.behaviour(self, conn)
        except OSError:
            pass
        finally:
            conn.close()

    # -- helpers for behaviours -------------------------------------------------------------

    def handshake(self, conn: socket.socket) -> ssl.SSLSocket:
        assert self.context is not None
        conn.settimeout(30)
        return self.context.wrap_socket(conn, server_side=True)

    def read_request(self, conn: socket.socket) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                raise ConnectionError("client went away")
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(rest) < length:
            rest += conn.recv(65536)
        self.requests.append(head)
        return head

    def drip(self, conn: socket.socket, data: bytes) -> None:
        for index in range(len(data)):
            if self.stop.wait(DRIP_S):
                return
            conn.sendall(data[index:index + 1])


def answer(body: bytes = OK_BODY, status: str = "200 OK", *, close: bool = False) -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(body)}\r\n" + ("Connection: close\r\n" if close else "")
    return head.encode() + b"\r\n" + body


# -- behaviours ---------------------------------------------------------------------------


def never_answers(server: Server, conn: socket.socket) -> None:
    """Accepts the TCP connection and sends nothing, not even its half of the TLS handshake."""
    server.stop.wait(120)


def drips_the_body(server: Server, conn: socket.socket) -> None:
    tls = server.handshake(conn)
    server.read_request(tls)
    body = b'{"kind":"Node","metadata":{"name":"x"},"pad":"' + b"x" * 200 + b'"}'
    head, _, rest = answer(body).partition(b"\r\n\r\n")
    tls.sendall(head + b"\r\n\r\n")
    server.drip(tls, rest)


def trickles_headers(server: Server, conn: socket.socket) -> None:
    tls = server.handshake(conn)
    server.read_request(tls)
    tls.sendall(b"HTTP/1.1 200 OK\r\n")
    server.drip(tls, b"X-Slow: " + b"a" * 200 + b"\r\n\r\n")


def answers_keeping_alive(server: Server, conn: socket.socket) -> None:
    tls = server.handshake(conn)
    tls.settimeout(0.2)  # so that the handler notices the end of the test
    while not server.stop.is_set():
        try:
            server.read_request(tls)
        except TimeoutError:
            continue
        except ConnectionError:
            return
        tls.sendall(answer())


def answers_then_closes_idle(server: Server, conn: socket.socket) -> None:
    """Answers one request without saying it will close, then closes (an idle timeout)."""
    tls = server.handshake(conn)
    server.read_request(tls)
    tls.sendall(answer())
    server.stop.wait(0.3)


def drops_the_second_request(server: Server, conn: socket.socket) -> None:
    """Answers the first request of a connection; reads the next one and closes unanswered,
    as a server closing an idle connection just as the request arrives."""
    tls = server.handshake(conn)
    server.read_request(tls)
    tls.sendall(answer())
    server.read_request(tls)


@contextmanager
def serving(certs: Path, behaviour: Callable[[Server, socket.socket], None]) -> Iterator[Server]:
    server = Server(certs, behaviour)
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


def kubeconfig_for(path: Path, server: str, ca: Path, **user: Any) -> Path:
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server,
                                               "certificate-authority": str(ca)}}],
        "users": [{"name": "u", "user": user or {"token": "t0ken"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(json.dumps(cfg))
    return path


def call_in_thread(fn: Callable[[], Any], bound_s: float) -> tuple[bool, BaseException | None]:
    """Run `fn`; (returned within `bound_s`, what it raised)."""
    raised: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()
            raised.append(None)
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(bound_s)
    return (not thread.is_alive(), raised[0] if raised else None)
