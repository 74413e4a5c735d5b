"""The lean Kubernetes transport: HTTP/1.1 over the standard library's socket and ssl.

It exists because importing the official client costs 0.2–0.3 s of CPU on every tick, while
the worker makes a handful of REST calls. It serves the kubeconfigs that kubeconfig.py marks as
lean (client certificate, bearer token, CA, insecure-skip-tls-verify).

Every exchange ends by its deadline, whatever the server does: each blocking step (name
resolution, connect, the TLS handshake, every send and every receive) gets what remains of the
deadline as its timeout, so a server that drips one byte every 2 s is cut off at the deadline
like one that never answers. One connection is kept alive between the calls of a tick; it is
dropped when the server has closed it. A read that the server dropped on the kept connection is
asked again once, on a new one; a write never is (it may have arrived: an uncertain write is
never replayed).

Each answer is read by the standard http.client.HTTPResponse over the connection's
deadline-armed reader (read_response): a reader of our own saved under 10% of the idle tick
(architecture.md, "Standard parts first"). What http.client cannot read, or what it would read
past the size bounds, is BadResponse, which the transport turns into KubeTemporaryError.
"""

from __future__ import annotations

import http.client
import io
import json
import os
import select
import socket
import ssl
import time
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from magicstick_host.errors import KubeConfigError, KubeTemporaryError
from magicstick_host.ports.kubeconfig import KubeConfig

if TYPE_CHECKING:
    from typing import Any, Protocol

    class RawSource(Protocol):
        def readinto(self, buffer: Any, /) -> int | None: ...

# larger answers are refused: the worker reads single objects and small lists
MAX_BODY_BYTES = 32 * 1024 * 1024
# what an answer may hold besides its body (http.client takes at most 100 header lines of
# 64 KiB): past this and the body's limit, the answer is refused, whatever its framing says
MAX_HEAD_BYTES = 8 * 1024 * 1024
USER_AGENT = "magicstick-host"


class BadResponse(Exception):
    """The bytes are not an HTTP/1.x answer that http.client reads whole, within the bounds."""


class Response:
    """status, body, and whether the connection may carry the next request."""

    __slots__ = ("body", "reusable", "status")

    def __init__(self, status: int, body: bytes, reusable: bool) -> None:
        self.status = status
        self.body = body
        self.reusable = reusable


class _Bounded(io.RawIOBase):
    """The answer's bytes from `source`, refused past `left` of them. http.client reads a chunk
    of a negative size (int("-1", 16)) to the connection's end, in 3.11 as in 3.14: this keeps
    that, and an endless run of interim answers, from filling the tick's memory."""

    def __init__(self, source: RawSource, left: int) -> None:
        self.source = source
        self.left = left

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        if self.left <= 0:
            raise BadResponse("the answer is longer than its bounds")
        count = self.source.readinto(memoryview(buffer)[:self.left])
        if count:
            self.left -= count
        return count


class _AnswerSocket:
    """What http.client.HTTPResponse takes for a socket: it only asks for its reader."""

    def __init__(self, reader: io.BufferedReader) -> None:
        self.reader = reader

    def makefile(self, mode: str) -> io.BufferedReader:
        return self.reader


def read_response(source: RawSource, method: str, limit: int) -> Response:
    """The answer to one `method` request, read from `source` by http.client.HTTPResponse.

    A body over `limit` bytes is cut at limit + 1 (so the caller can tell) and its connection
    not reused. A Content-Length body that ends early is BadResponse (http.client's read() of
    the whole body is IncompleteRead); a body framed by the connection's end is whatever came
    before it. The connection carries the next request only when http.client keeps it (not
    will_close) and the body was wholly read. Whatever http.client raises on the bytes
    (HTTPException: BadStatusLine, LineTooLong, IncompleteRead, too many headers; ValueError;
    OverflowError, for a chunk size past sys.maxsize read whole) is BadResponse; OSError (a
    timeout, a reset) is left to the transport. Held to http.client by
    tests/ports/test_kube_http_answers.py.
    """
    reader = io.BufferedReader(_Bounded(source, limit + 1 + MAX_HEAD_BYTES))
    answer = http.client.HTTPResponse(_AnswerSocket(reader), method=method)  # type: ignore[arg-type]
    try:
        answer.begin()
        body = answer.read(limit + 1)
        wholly, missing = answer.isclosed(), answer.length
    except (http.client.HTTPException, ValueError, OverflowError) as exc:
        raise BadResponse(f"{type(exc).__name__}: {str(exc)[:120]!r}") from None
    finally:
        # closes its reader, never the connection: a finaliser left to do it may find the
        # reader closed first and print "Exception ignored" (3.14)
        answer.close()
    if len(body) > limit:
        return Response(answer.status, body, False)
    if missing:  # what its Content-Length announced and did not come
        raise BadResponse(f"the answer ended after {len(body)} body bytes, "
                          f"{missing} short of its Content-Length")
    return Response(answer.status, body, wholly and not answer.will_close)


class DeadlineExceeded(TimeoutError):
    pass


class _Connection:
    """A socket whose every blocking call is bounded by `deadline` (time.monotonic())."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.deadline = 0.0

    def arm(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded("deadline reached")
        self.sock.settimeout(left)

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            self.arm()
            sent = self.sock.send(view)
            view = view[sent:]

    def dropped(self) -> bool:
        """The server closed the idle connection (or sent something unasked)."""
        if isinstance(self.sock, ssl.SSLSocket) and self.sock.pending():
            return True
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def close(self) -> None:
        self.sock.close()


class _Reader(io.RawIOBase):
    """The response's byte stream; closing it leaves the socket open for the next call."""

    def __init__(self, connection: _Connection) -> None:
        self.connection = connection

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self.connection.arm()
        return self.connection.sock.recv_into(buffer)


def _resolve(host: str, port: int, deadline: float) -> list[Any]:
    """Addresses for host: at once for an IP literal, else on a thread we stop waiting for."""
    try:
        return socket.getaddrinfo(_without_idna(host), port, type=socket.SOCK_STREAM,
                                  flags=socket.AI_NUMERICHOST)
    except socket.gaierror:
        pass
    import threading  # only for names: the appliance's kubeconfig names 127.0.0.1

    found: list[Any] = []
    failed: list[BaseException] = []

    def lookup() -> None:
        try:
            found.extend(socket.getaddrinfo(_without_idna(host), port, type=socket.SOCK_STREAM))
        except OSError as exc:
            failed.append(exc)

    thread = threading.Thread(target=lookup, name="kube-resolve", daemon=True)
    thread.start()
    thread.join(max(0.0, deadline - time.monotonic()))
    if thread.is_alive():
        raise DeadlineExceeded(f"resolving {host}")
    if failed:
        raise failed[0]
    return found


def _load_client_certificate(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """ssl loads certificates from files only: an anonymous memory file keeps the key off disk
    (a private temporary file where there is no memfd or /proc)."""
    pem = cert.rstrip(b"\n") + b"\n" + key
    try:
        fd = os.memfd_create("kube-client-cert", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        fd = -1
    if fd >= 0:
        try:
            with open(fd, "wb", closefd=False) as handle:
                handle.write(pem)
            context.load_cert_chain(f"/proc/self/fd/{fd}")
            return
        except FileNotFoundError:  # no /proc
            pass
        finally:
            os.close(fd)
    import tempfile

    with tempfile.NamedTemporaryFile(prefix="kube-client-", suffix=".pem") as handle:
        handle.write(pem)
        handle.flush()
        context.load_cert_chain(handle.name)


def ssl_context(config: KubeConfig) -> ssl.SSLContext:
    """The TLS context of a kubeconfig; KubeConfigError for certificates that do not load."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        if config.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif config.ca_pem is not None:
            context.load_verify_locations(cadata=config.ca_pem)
        else:
            context.load_default_certs()
        if config.client_cert_pem is not None and config.client_key_pem is not None:
            _load_client_certificate(context, config.client_cert_pem, config.client_key_pem)
    except (ssl.SSLError, ValueError) as exc:
        raise KubeConfigError(
            f"cannot load kubeconfig {config.path}: its certificates do not load: "
            f"{' '.join(str(exc).split())}"
        ) from exc
    except OSError as exc:  # no room for the temporary certificate file
        raise KubeTemporaryError(f"cannot load the client certificate: {exc}") from exc
    return context


class LeanTransport:
    name = "lean"

    def __init__(self, config: KubeConfig) -> None:
        if config.scheme != "https":
            # a bearer token or a client's requests in clear text: never from this transport
            raise KubeConfigError(
                f"cannot load kubeconfig {config.path}: server {config.server!r} is not an "
                f"https:// URL (the lean transport speaks TLS only)"
            )
        self.config = config
        self._connection: _Connection | None = None
        host = f"[{config.host}]" if ":" in config.host else config.host
        self._host_header = host if config.port == 443 else f"{host}:{config.port}"
        self._context: ssl.SSLContext = ssl_context(config)

    def request(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]],
        body: Any,
        content_type: str,
        timeout: float,
        accept: str = "application/json",
    ) -> tuple[int, bytes]:
        """One exchange within `timeout` seconds: (HTTP status, body), or KubeTemporaryError."""
        deadline = time.monotonic() + timeout
        data = b"" if body is None else json.dumps(body).encode()
        target = self.config.base_path + path + (f"?{urlencode(query)}" if query else "")
        head = [
            f"{method} {target} HTTP/1.1",
            f"Host: {self._host_header}",
            f"User-Agent: {USER_AGENT}",
            f"Accept: {accept}",
        ]
        if body is not None or method in ("POST", "PUT", "PATCH"):
            head += [f"Content-Type: {content_type}", f"Content-Length: {len(data)}"]
        if self.config.token:
            head.append(f"Authorization: Bearer {self.config.token}")
        message = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data
        kept = self._connection
        self._connection = None
        if kept is not None and kept.dropped():
            kept.close()
            kept = None
        if kept is not None:
            try:
                return self._exchange(kept, message, method, deadline)
            except (OSError, BadResponse) as exc:
                # the server may close a kept connection just as a request leaves: a read can
                # go again on a new one, a write never (it may have arrived)
                if method != "GET" or isinstance(exc, TimeoutError):
                    raise KubeTemporaryError(self._why(exc, timeout)) from exc
        try:
            return self._exchange(self._connect(deadline), message, method, deadline)
        except (OSError, BadResponse) as exc:
            raise KubeTemporaryError(self._why(exc, timeout)) from exc

    def _exchange(
        self, connection: _Connection, message: bytes, method: str, deadline: float
    ) -> tuple[int, bytes]:
        """Send, read the whole answer, keep the connection if the server does."""
        try:
            connection.deadline = deadline
            connection.sendall(message)
            response = read_response(_Reader(connection), method, MAX_BODY_BYTES)
        except BaseException:
            connection.close()
            raise
        if len(response.body) > MAX_BODY_BYTES:
            connection.close()
            raise KubeTemporaryError(f"the answer is larger than {MAX_BODY_BYTES} bytes")
        if response.reusable:
            self._connection = connection
        else:
            connection.close()
        return response.status, response.body

    def _connect(self, deadline: float) -> _Connection:
        config = self.config
        errors: list[str] = []
        for family, kind, proto, _name, address in _resolve(config.host, config.port, deadline):
            sock = socket.socket(family, kind, proto)
            connection = _Connection(sock)
            connection.deadline = deadline
            try:
                connection.arm()
                sock.connect(address)
            except DeadlineExceeded:
                connection.close()
                raise
            except OSError as exc:
                connection.close()
                errors.append(f"{address[0]}: {exc}")
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                tls = self._context.wrap_socket(
                    sock,
                    server_hostname=_without_idna(config.tls_server_name or config.host),
                    do_handshake_on_connect=False,
                )
                connection.sock = tls
                connection.arm()  # the handshake as a whole is bounded by this timeout
                tls.do_handshake()
            except BaseException:
                connection.close()
                raise
            return connection
        raise ConnectionError(f"cannot connect to {config.server}: {'; '.join(errors)}")

    @staticmethod
    def _why(exc: BaseException, timeout: float) -> str:
        if isinstance(exc, TimeoutError):
            return f"no complete answer within {timeout:.1f} s"
        return f"{type(exc).__name__}: {' '.join(str(exc).split()) or 'no answer'}"


def _without_idna(name: str) -> str | bytes:
    """A host name as socket.getaddrinfo and ssl take it. Both encode a str with the idna codec,
    whose import (encodings.idna, stringprep, unicodedata) is about 2 ms of every tick; an
    ASCII name, as kubeconfigs have (an IP address or a DNS name), is the same name as bytes,
    which they take as they are."""
    return name.encode("ascii") if name.isascii() else name
