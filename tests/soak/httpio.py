"""Just enough HTTP/1.1 framing for the fault proxy: read one whole request or response.

Messages are forwarded as the raw bytes read (head and body), so nothing the worker or the
apiserver sent is rewritten. Bodies are framed by Content-Length or chunked transfer encoding;
a response with neither is read to the end of the connection.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass

MAX_HEAD = 256 * 1024
PHRASES = {
    401: "Unauthorized",
    403: "Forbidden",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


class Closed(Exception):
    """The peer closed the connection (cleanly, before a whole message)."""


class Reader:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise Closed()
        self.buf += chunk

    def until(self, delim: bytes, limit: int = MAX_HEAD) -> bytes:
        while (at := self.buf.find(delim)) < 0:
            if len(self.buf) > limit:
                raise ValueError("HTTP head too long")
            self._fill()
        out, self.buf = self.buf[: at + len(delim)], self.buf[at + len(delim):]
        return out

    def exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def rest(self) -> bytes:
        try:
            while True:
                self._fill()
        except Closed:
            pass
        out, self.buf = self.buf, b""
        return out


@dataclass(frozen=True)
class Message:
    raw: bytes
    start_line: str
    headers: dict[str, str]  # lower-case names; the last value wins

    @property
    def method(self) -> str:
        return self.start_line.split(" ", 1)[0]

    @property
    def path(self) -> str:
        parts = self.start_line.split(" ")
        return parts[1] if len(parts) > 1 else ""

    @property
    def status(self) -> int:
        parts = self.start_line.split(" ")
        return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0

    @property
    def wants_close(self) -> bool:
        return self.headers.get("connection", "").lower() == "close"


def _head(reader: Reader) -> tuple[bytes, str, dict[str, str]]:
    raw = reader.until(b"\r\n\r\n")
    lines = raw.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    return raw, lines[0], headers


def _body(reader: Reader, headers: dict[str, str], *, to_close: bool) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts = []
        while True:
            size_line = reader.until(b"\r\n")
            parts.append(size_line)
            size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while (trailer := reader.until(b"\r\n")) != b"\r\n":
                    parts.append(trailer)
                parts.append(b"\r\n")
                return b"".join(parts)
            parts.append(reader.exact(size + 2))
    if "content-length" in headers:
        return reader.exact(int(headers["content-length"]))
    return reader.rest() if to_close else b""


def read_request(reader: Reader) -> Message:
    raw, start, headers = _head(reader)
    return Message(raw + _body(reader, headers, to_close=False), start, headers)


def read_response(reader: Reader, request_method: str) -> Message:
    raw, start, headers = _head(reader)
    message = Message(raw, start, headers)
    if request_method == "HEAD" or message.status in (204, 304) or 100 <= message.status < 200:
        return message
    return Message(raw + _body(reader, headers, to_close=True), start, headers)


def status_answer(code: int, message: str) -> bytes:
    """A Kubernetes `Status` failure answer, as the apiserver itself writes one."""
    reason = PHRASES.get(code, "Error")
    body = json.dumps({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason.replace(" ", ""), "code": code,
    }).encode()
    head = (f"HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    return head.encode("latin-1") + body
