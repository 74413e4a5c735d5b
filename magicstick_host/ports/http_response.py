"""Reading one HTTP/1.1 response from a byte stream: the status, the headers the transport needs,
and the whole body, framed by Content-Length, chunked transfer coding, or the connection's end.

It replaces http.client.HTTPResponse in the lean transport because http.client imports the
email package to parse headers, a third of the transport's import cost on every tick, while the
transport needs three headers. tests/ports/test_http_response.py holds it to http.client's
reading of the same bytes, for generated responses.
"""

from __future__ import annotations

from magicstick_host.static import Protocol

# a status line or header line longer than this, or more headers, is not a Kubernetes answer
MAX_LINE_BYTES = 65536
MAX_HEADERS = 100


class BadResponse(Exception):
    """The bytes are not a well-formed HTTP/1.x response (or it ended early)."""


class ByteStream(Protocol):
    def readline(self, limit: int = -1, /) -> bytes: ...

    def read(self, size: int = -1, /) -> bytes: ...


class Response:
    """status, body, and whether the connection may carry the next request."""

    __slots__ = ("body", "reusable", "status")

    def __init__(self, status: int, body: bytes, reusable: bool) -> None:
        self.status = status
        self.body = body
        self.reusable = reusable


def _line(stream: ByteStream) -> bytes:
    line = stream.readline(MAX_LINE_BYTES + 1)
    if len(line) > MAX_LINE_BYTES:
        raise BadResponse("a header line is too long")
    return line


def _status_line(stream: ByteStream) -> tuple[str, int]:
    line = _line(stream)
    if not line:
        raise BadResponse("the server closed the connection without an answer")
    parts = line.decode("latin-1").rstrip("\r\n").split(None, 2)
    # three ASCII digits, 100-999, as http.client requires (str.isdigit also takes "²00")
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or len(parts[1]) != 3 \
            or not _ascii_digits(parts[1]) or parts[1][0] == "0":
        raise BadResponse(f"not an HTTP/1 status line: {line[:80]!r}")
    return parts[0], int(parts[1])


def _ascii_digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _headers(stream: ByteStream) -> dict[str, str]:
    """The header fields, names lower-cased; repeated fields joined by ', ' (RFC 9110 5.3)."""
    fields: dict[str, str] = {}
    for _ in range(MAX_HEADERS + 1):
        line = _line(stream)
        if line in (b"\r\n", b"\n"):
            return fields
        if not line:
            raise BadResponse("the answer ended inside its headers")
        name, colon, value = line.decode("latin-1").partition(":")
        if not colon:
            if line[:1] in (b" ", b"\t"):  # obsolete folding: part of the previous value
                continue
            raise BadResponse(f"not a header line: {line[:80]!r}")
        key = name.strip().lower()
        text = value.strip()
        fields[key] = f"{fields[key]}, {text}" if key in fields else text
    raise BadResponse(f"more than {MAX_HEADERS} header lines")


def _exactly(stream: ByteStream, size: int) -> bytes:
    data = stream.read(size)
    if len(data) < size:
        raise BadResponse(f"the answer ended after {len(data)} of {size} body bytes")
    return data


def _chunked(stream: ByteStream, limit: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        line = _line(stream)
        if not line:
            raise BadResponse("the answer ended inside its chunked body")
        size_text = line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise BadResponse(f"not a chunk size: {line[:80]!r}") from None
        if size < 0:
            raise BadResponse(f"not a chunk size: {line[:80]!r}")
        if size == 0:
            break
        total += size
        if total > limit:
            # the caller sees a body over its limit and refuses it; nothing more is read
            parts.append(_exactly(stream, size - (total - limit - 1)))
            return b"".join(parts)
        parts.append(_exactly(stream, size))
        if _line(stream) not in (b"\r\n", b"\n"):
            raise BadResponse("a chunk does not end with CRLF")
    while True:  # trailer fields, up to the blank line
        trailer = _line(stream)
        if trailer in (b"\r\n", b"\n", b""):
            return b"".join(parts)


def read_response(stream: ByteStream, method: str, limit: int) -> Response:
    """The answer to one request. A body over `limit` bytes is cut at limit + 1 bytes (so the
    caller can tell) and the connection is not reused."""
    while True:
        version, status = _status_line(stream)
        fields = _headers(stream)
        if not 100 <= status < 200 or status == 101:
            break  # interim answers (100 Continue) are followed by the real one
    tokens = {t.strip().lower() for t in fields.get("connection", "").split(",")}
    persistent = "close" not in tokens if version != "HTTP/1.0" else "keep-alive" in tokens
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return Response(status, b"", persistent)
    coding = fields.get("transfer-encoding", "").lower()
    if coding:
        if coding.rsplit(",", 1)[-1].strip() != "chunked":
            # framed by the connection's end (RFC 9112 6.3)
            body = stream.read(limit + 1)
            return Response(status, body, False)
        body = _chunked(stream, limit)
        return Response(status, body, persistent and len(body) <= limit)
    length_text = fields.get("content-length")
    if length_text is not None:
        values = {v.strip() for v in length_text.split(",")}
        if len(values) != 1 or not _ascii_digits(next(iter(values))):
            raise BadResponse(f"not a Content-Length: {length_text[:80]!r}")
        length = int(next(iter(values)))
        if length > limit:
            return Response(status, _exactly(stream, limit + 1), False)
        return Response(status, _exactly(stream, length), persistent)
    return Response(status, stream.read(limit + 1), False)
