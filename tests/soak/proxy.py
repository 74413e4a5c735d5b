"""The fault proxy: a TLS-terminating HTTP/1.1 proxy between one worker and the apiserver.

Between ticks the soak arms it with at most one `ApiFault`; it then counts the HTTP requests of
the tick and, from request number `after` on (or only for that one request when `once`), does
what the fault says instead of forwarding:
- `slow-drip`: forwards the request, then sends the apiserver's answer one byte every 2 s;
- `reset`: a TCP reset instead of an answer;
- `5xx`: a Kubernetes Status answer with a 500/502/503/504 code;
- `401` / `403`: an Unauthorized / Forbidden Status answer;
- `blackhole`: reads the request and never answers (new connections are accepted and never
  get a TLS handshake);
- `restart`: resets every connection and refuses new ones (the listening socket is closed) for
  `down_s` seconds, as a restarting apiserver does, then serves again; the downtime may
  outlast the tick.
- the hostile answers (`HOSTILE_KINDS`, issue #24; made in tests/soak/hostile.py from the
  hostile suite's generators): the request is forwarded, and the worker gets instead of the
  apiserver's answer a body `[` x 200000, a JSON value nested 2,000 levels, a body of 33 MiB
  (streamed), a JSON array instead of an object, the status line `HTTP/1.1 ²00` or
  `HTTP/1.1 099`, `Content-Length: ¹`, or 10,000 header lines; then the connection is closed.
Unarmed, or before `after`, every request is passed through unchanged.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tests.soak.httpio import (
    Closed,
    Message,
    Reader,
    read_request,
    read_response,
    status_answer,
)
from tests.soak.pki import Upstream

FAULT_KINDS = ("slow-drip", "reset", "5xx", "401", "403", "blackhole", "restart")
HOSTILE_KINDS = ("deep-open", "deep-2000", "huge-33mib", "not-an-object", "status-superscript",
                 "status-099", "cl-superscript", "header-flood")
DRIP_INTERVAL_S = 2.0
IO_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class ApiFault:
    kind: str
    after: int = 0  # requests passed through first
    once: bool = False  # only request number `after` (a transient), else the rest of the tick
    code: int = 0  # the HTTP code of a 5xx
    down_s: float = 0.0  # restart: how long new connections are refused

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS and self.kind not in HOSTILE_KINDS:
            raise ValueError(f"unknown API fault {self.kind!r}")


def _reset(sock: socket.socket) -> None:
    """Close with a TCP RST (SO_LINGER 0), not a FIN."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


def _hold(sock: socket.socket, stop: threading.Event) -> None:
    """Never answer; return once the peer has gone (or the proxy stops)."""
    while not stop.is_set():
        try:
            readable, _, _ = select.select([sock], [], [], 0.5)
            if readable and not sock.recv(65536):
                return
        except (OSError, ValueError):
            return


class FaultProxy:
    def __init__(self, upstream: Upstream, cert: Path, key: Path) -> None:
        self.upstream = upstream
        self._server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._server_ctx.load_cert_chain(str(cert), str(key))
        self._client_ctx = ssl.create_default_context(cafile=str(upstream.ca_file))
        if upstream.cert_file is not None:
            self._client_ctx.load_cert_chain(str(upstream.cert_file),
                                             str(upstream.key_file or upstream.cert_file))
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._fault: ApiFault | None = None
        self._seen = 0  # requests of this tick
        self._fired = 0  # requests of this tick the fault acted on
        self._down_until = 0.0
        self._listener: socket.socket | None = None
        self._conns: set[socket.socket] = set()
        self.port = 0
        self._acceptor: threading.Thread | None = None

    # -- control (the soak's thread) ----------------------------------------------------------

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._listen()
        self._acceptor = threading.Thread(target=self._accept_loop, daemon=True,
                                          name=f"proxy-{self.port}")
        self._acceptor.start()

    def arm(self, fault: ApiFault | None) -> None:
        with self._lock:
            self._fault, self._seen, self._fired = fault, 0, 0

    def disarm(self) -> int:
        """End the tick's fault; returns how many requests it acted on. Connections left
        hanging (blackhole, slow drip) are cut: the worker process has exited anyway."""
        with self._lock:
            fired = self._fired
            self._fault, self._seen, self._fired = None, 0, 0
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        return fired

    def stop(self) -> None:
        self._stop.set()
        self.disarm()
        if self._acceptor is not None:
            self._acceptor.join(5)
        self._close_listener()

    # -- the listening socket -----------------------------------------------------------------

    def _listen(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        sock.listen(64)
        sock.settimeout(0.2)
        self.port = sock.getsockname()[1]
        self._listener = sock

    def _close_listener(self) -> None:
        sock, self._listener = self._listener, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            if time.monotonic() < self._down_until:
                self._close_listener()
                time.sleep(0.05)
                continue
            if self._listener is None:
                try:
                    self._listen()
                except OSError:  # the port is briefly unavailable; try again
                    time.sleep(0.1)
                    continue
            try:
                assert self._listener is not None
                conn, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    # -- one connection -----------------------------------------------------------------------

    def _decide(self) -> ApiFault | None:
        with self._lock:
            n, fault = self._seen, self._fault
            self._seen += 1
            if fault is None or n < fault.after or (fault.once and n != fault.after):
                return None
            if fault.kind == "restart" and self._fired:
                return None  # it restarted once; it serves again when it is back
            self._fired += 1
            return fault

    def _blackhole_now(self) -> bool:
        with self._lock:
            fault = self._fault
            if fault is None or fault.kind != "blackhole" or fault.once:
                return False
            if self._seen < fault.after:
                return False
            self._fired += 1
            return True

    def _track(self, sock: socket.socket, on: bool) -> None:
        with self._lock:
            (self._conns.add if on else self._conns.discard)(sock)

    def _serve(self, raw: socket.socket) -> None:
        self._track(raw, True)
        try:
            if self._blackhole_now():
                _hold(raw, self._stop)
                return
            raw.settimeout(IO_TIMEOUT_S)
            try:
                client = self._server_ctx.wrap_socket(raw, server_side=True)
            except (OSError, ssl.SSLError):
                return
            self._track(client, True)
            try:
                self._exchange(client)
            finally:
                self._track(client, False)
                with contextlib.suppress(OSError):
                    client.close()
        finally:
            self._track(raw, False)
            with contextlib.suppress(OSError):
                raw.close()

    def _exchange(self, client: ssl.SSLSocket) -> None:
        reader = Reader(client)
        upstream: ssl.SSLSocket | None = None
        up_reader: Reader | None = None
        try:
            while not self._stop.is_set():
                try:
                    request = read_request(reader)
                except (Closed, OSError, ValueError):
                    return
                fault = self._decide()
                if fault is not None and fault.kind in ("5xx", "401", "403"):
                    code = fault.code or int(fault.kind)
                    client.sendall(status_answer(code, "injected by the soak's fault proxy"))
                    continue  # the connection stays usable, as the apiserver's would
                if fault is not None and fault.kind not in ("slow-drip", *HOSTILE_KINDS):
                    self._cut(fault, client)
                    return
                if upstream is None:
                    upstream = self._connect()
                    up_reader = Reader(upstream)
                assert up_reader is not None
                try:
                    upstream.sendall(request.raw)
                    answer = read_response(up_reader, request.method)
                except (Closed, OSError, ValueError):
                    return  # the apiserver dropped us: so does the proxy
                if fault is not None and fault.kind in HOSTILE_KINDS:
                    self._hostile(fault.kind, client, answer)
                    return
                if fault is not None:  # slow-drip
                    self._drip(client, answer.raw)
                    return
                client.sendall(answer.raw)
                if answer.wants_close or request.wants_close:
                    return
        except OSError:
            return
        finally:
            if upstream is not None:
                with contextlib.suppress(OSError):
                    upstream.close()

    def _connect(self) -> ssl.SSLSocket:
        sock = socket.create_connection((self.upstream.host, self.upstream.port), timeout=30)
        return self._client_ctx.wrap_socket(sock, server_hostname=self.upstream.host)

    def _cut(self, fault: ApiFault, client: ssl.SSLSocket) -> None:
        if fault.kind == "reset":
            _reset(client)
        elif fault.kind == "blackhole":
            _hold(client, self._stop)
        else:  # restart
            with self._lock:
                self._down_until = time.monotonic() + fault.down_s
                conns = list(self._conns)
                listener = self._listener
            if listener is not None:  # refuse from now on: wakes the acceptor's accept()
                with contextlib.suppress(OSError):
                    listener.shutdown(socket.SHUT_RDWR)
            for conn in conns:  # other threads own them: wake their reads, they close
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)

    def _hostile(self, kind: str, client: ssl.SSLSocket, answer: Message) -> None:
        from tests.soak.hostile import hostile_answer  # it imports the hostile suite's proxy

        try:
            for piece in hostile_answer(kind, answer):
                if self._stop.is_set():
                    return
                client.sendall(piece)
        except OSError:
            return  # the worker stopped reading (a bound, or its deadline): as it should
        with contextlib.suppress(OSError):
            client.shutdown(socket.SHUT_RDWR)

    def _drip(self, client: ssl.SSLSocket, data: bytes) -> None:
        for i in range(len(data)):
            if self._stop.is_set():
                return
            try:
                client.sendall(data[i:i + 1])
            except OSError:
                return
            if self._stop.wait(DRIP_INTERVAL_S):
                return
