"""The soak's TLS fault proxy (tests/soak/proxy.py), extended for hostile answers.

`HostileProxy` keeps the soak proxy's listener, TLS and upstream connection and replaces its
per-connection exchange with one that
- logs every request of the worker: the tick it belongs to, method, path, body, what the
  apiserver answered (when the request was forwarded) and whether the worker got that answer
  intact; the checks of "no write sent twice" read this log (`writes.py`);
- when armed with a `Plan`, answers the request(s) the plan picks with the bytes the plan
  makes (a hostile body, a malformed head, ...), after forwarding the request to the apiserver
  or without, then closes the connection, keeps it, or holds it unanswered;
- with a `guard`, answers some requests itself and never forwards them (the real-executor
  case: no HostOperation may ever reach a tick that acts on this machine).

`Recorder` is a plain loopback listener that records every byte that arrives and never
answers: where a worker must not connect (an edited memo's server, an http:// kubeconfig).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tests.soak.httpio import Closed, Message, Reader, read_request, read_response
from tests.soak.proxy import FaultProxy, _hold

# what the worker gets instead of the apiserver's answer: the request and, when it was
# forwarded, the apiserver's answer
Answer = Callable[[Message, "Message | None"], Iterable[bytes]]
Matcher = Callable[[Message], bool]


def body_of(message: Message) -> bytes:
    at = message.raw.find(b"\r\n\r\n")
    return message.raw[at + 4:] if at >= 0 else b""


def split_answer(answer: Message) -> tuple[bytes, bytes]:
    """(head without the blank line, body) of a forwarded answer."""
    at = answer.raw.find(b"\r\n\r\n")
    return answer.raw[:at], answer.raw[at + 4:]


@dataclass
class Plan:
    answer: Answer
    at: int = 0  # the first matching request of the tick it acts on (0-based)
    rest: bool = False  # and every matching request after it
    forward: bool = True  # the apiserver gets the request first
    then: str = "close"  # "close" | "keep" | "hold" the worker's connection afterwards
    match: Matcher | None = None  # which requests count (None: all)
    label: str = ""
    details: list[str] = field(default_factory=list)  # what the answer was, once made

    def __post_init__(self) -> None:
        if self.then not in ("close", "keep", "hold"):
            raise ValueError(self.then)


@dataclass
class Exchange:
    tick: str
    method: str
    path: str
    body: bytes
    upstream_status: int | None  # None: not forwarded (or no answer came back)
    hostile: bool  # the worker got the plan's bytes, not the apiserver's answer
    guarded: bool = False


@dataclass
class Shared:
    lock: threading.Lock = field(default_factory=threading.Lock)
    tick: str = "-"
    plan: Plan | None = None
    matched: int = 0
    fired: int = 0
    log: list[Exchange] = field(default_factory=list)


class HostileProxy(FaultProxy):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.shared = Shared()
        self.guard: Callable[[Message], bytes | None] | None = None

    # -- control ------------------------------------------------------------------------------

    def begin(self, tick: str, plan: Plan | None = None) -> None:
        with self.shared.lock:
            self.shared.tick, self.shared.plan = tick, plan
            self.shared.matched = self.shared.fired = 0

    def end(self) -> int:
        """End the tick; returns how many requests the plan acted on."""
        with self.shared.lock:
            fired = self.shared.fired
            self.shared.plan, self.shared.tick = None, "-"
        self.disarm()  # cuts connections left held
        return fired

    @property
    def log(self) -> list[Exchange]:
        with self.shared.lock:
            return list(self.shared.log)

    def requests_of(self, tick: str) -> list[Exchange]:
        return [e for e in self.log if e.tick == tick]

    # -- one request --------------------------------------------------------------------------

    def _pick(self, request: Message) -> tuple[str, Plan | None]:
        with self.shared.lock:
            s = self.shared
            plan = s.plan
            if plan is None or (plan.match is not None and not plan.match(request)):
                return s.tick, None
            n = s.matched
            s.matched += 1
            if n < plan.at or (n > plan.at and not plan.rest):
                return s.tick, None
            s.fired += 1
            return s.tick, plan

    def _record(self, exchange: Exchange) -> None:
        with self.shared.lock:
            self.shared.log.append(exchange)

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
                guarded = self.guard(request) if self.guard is not None else None
                if guarded is not None:
                    tick = self.shared.tick
                    self._record(Exchange(tick, request.method, request.path,
                                          body_of(request), None, False, guarded=True))
                    client.sendall(guarded)
                    continue
                tick, plan = self._pick(request)
                answer: Message | None = None
                if plan is None or plan.forward:
                    if upstream is None:
                        upstream = self._connect()
                        up_reader = Reader(upstream)
                    assert up_reader is not None
                    try:
                        upstream.sendall(request.raw)
                        answer = read_response(up_reader, request.method)
                    except (Closed, OSError, ValueError):
                        self._record(Exchange(tick, request.method, request.path,
                                              body_of(request), None, plan is not None))
                        return
                self._record(Exchange(tick, request.method, request.path, body_of(request),
                                      answer.status if answer is not None else None,
                                      plan is not None))
                if plan is None:
                    assert answer is not None
                    client.sendall(answer.raw)
                    if answer.wants_close or request.wants_close:
                        return
                    continue
                try:
                    for piece in plan.answer(request, answer):
                        if self._stop.is_set():
                            return
                        client.sendall(piece)
                except OSError:
                    return  # the worker gave up reading (its deadline): as it should
                if plan.then == "hold":
                    _hold(client, self._stop)
                    return
                if plan.then == "close":
                    with contextlib.suppress(OSError):
                        client.shutdown(socket.SHUT_RDWR)
                    return
        except OSError:
            return
        finally:
            if upstream is not None:
                with contextlib.suppress(OSError):
                    upstream.close()


class Recorder:
    """A loopback TCP listener that records every byte it receives and never answers."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = int(self.listener.getsockname()[1])
        self.received = bytearray()
        self.connections = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="recorder")

    def __enter__(self) -> Recorder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        with contextlib.suppress(OSError):
            self.listener.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._drain, args=(conn,), daemon=True).start()

    def _drain(self, conn: socket.socket) -> None:
        conn.settimeout(0.5)
        try:
            while not self._stop.is_set():
                try:
                    data = conn.recv(65536)
                except TimeoutError:
                    continue
                if not data:
                    return
                with self._lock:
                    self.received += data
        except OSError:
            return
        finally:
            conn.close()

    def snapshot(self) -> tuple[int, bytes]:
        with self._lock:
            return self.connections, bytes(self.received)
