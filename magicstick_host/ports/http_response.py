"""Reading one HTTP/1.1 response from a byte stream: the status, the headers the transport needs,
and the whole body, framed by Content-Length, chunked transfer coding, or the connection's end.

It replaces http.client.HTTPResponse in the lean transport because http.client imports the
email package to parse headers, a third of the transport's import cost on every tick, while the
transport needs three headers. tests/ports/test_http_response.py and
tests/differential/test_http_response.py hold it to http.client's reading of the same bytes
(generated, mutated and random ones): what it reads, http.client reads the same, and what
http.client would read otherwise is BadResponse.
"""

from __future__ import annotations

from typing import Protocol

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
    text = line.decode("latin-1")
    parts = text.split(None, 2)
    if len(parts) == 2:
        # no reason: http.client then reads the status from the rest of the line, which
        # int() must read whole (it strips ASCII blanks, not the other blanks str.split takes)
        parts = text.split(None, 1)
        parts[1] = parts[1].rstrip(" \t\r\n")
    # three ASCII digits, 100-999, as http.client requires (str.isdigit also takes "²00")
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or len(parts[1]) != 3 \
            or not _ascii_digits(parts[1]) or parts[1][0] == "0":
        raise BadResponse(f"not an HTTP/1 status line: {line[:80]!r}")
    return parts[0], int(parts[1])


def _ascii_digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _headers(stream: ByteStream) -> dict[str, list[str]]:
    """The header fields by lower-cased name, each occurrence's value in order.

    Read as http.client reads them (the email package's compat32 parser): a value loses its
    leading blanks and its line end, not its trailing blanks. What that parser reads otherwise
    is refused: a line that is not `token: value` (a name with blanks, no colon, obsolete line
    folding) and a bare CR, which it takes for a line end.
    """
    fields: dict[str, list[str]] = {}
    for _ in range(MAX_HEADERS + 1):
        line = _line(stream)
        if line in (b"\r\n", b"\n"):
            return fields
        if not line:
            raise BadResponse("the answer ended inside its headers")
        text = line.decode("latin-1")
        text = text[:-2] if text.endswith("\r\n") else text.rstrip("\n")
        name, colon, value = text.partition(":")
        if not colon or not name or not all("!" <= c <= "~" for c in name) or "\r" in text:
            raise BadResponse(f"not a header line: {line[:80]!r}")
        fields.setdefault(name.lower(), []).append(value.lstrip(" \t"))
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
        if stream.read(2) != b"\r\n":  # http.client drops two bytes, whatever they are
            raise BadResponse("a chunk does not end with CRLF")
    while True:  # trailer fields, up to the blank line
        trailer = _line(stream)
        if trailer in (b"\r\n", b"\n", b""):
            return b"".join(parts)


def _persistent(version: str, fields: dict[str, list[str]]) -> bool:
    """Whether the connection carries the next request: only when http.client would keep it
    too (its test is a substring of the first Connection field; ours also needs the token)."""
    connections = fields.get("connection", [])
    tokens = {t.strip().lower() for value in connections for t in value.split(",")}
    first = connections[0].lower() if connections else ""
    if version != "HTTP/1.0":
        return "close" not in tokens and "close" not in first
    return "keep-alive" in tokens and "keep-alive" in first and "close" not in tokens


def _content_length(fields: dict[str, list[str]]) -> int | None:
    """The body's length: http.client takes the first field's int(); only plain ASCII digits,
    the same in every field, are read here, and anything else is refused."""
    values = fields.get("content-length")
    if values is None:
        return None
    plain = {v.strip(" \t") for v in values}
    text = next(iter(plain))
    if len(plain) != 1 or not _ascii_digits(text):
        raise BadResponse(f"not a Content-Length: {', '.join(values)[:80]!r}")
    return int(text)


def read_response(stream: ByteStream, method: str, limit: int) -> Response:
    """The answer to one request. A body over `limit` bytes is cut at limit + 1 bytes (so the
    caller can tell) and the connection is not reused.

    What this reads, http.client reads the same (status, body, and it keeps the connection
    at least when this does); what it would read otherwise is BadResponse. Held to it by
    tests/differential/test_http_response.py.
    """
    while True:
        version, status = _status_line(stream)
        fields = _headers(stream)
        if status != 100:
            break  # 100 Continue is followed by the real answer; other 1xx are, as http.client
            # reads them, the answer itself
    persistent = _persistent(version, fields)
    codings = fields.get("transfer-encoding")
    if codings is not None and (len(codings) != 1 or codings[0].lower() != "chunked"):
        # http.client frames by Content-Length or the close for a coding that is not exactly
        # "chunked"; no Kubernetes answer has one
        raise BadResponse(f"a Transfer-Encoding other than chunked: {codings!r}"[:120])
    length = None if codings is not None else _content_length(fields)
    if method == "HEAD":
        return Response(status, b"", persistent)
    if status in (204, 304) or 100 <= status < 200:
        if codings is not None:  # http.client reads chunks after it anyway: a broken server
            raise BadResponse(f"a chunked body on a {status} answer, which has none")
        return Response(status, b"", persistent)
    if codings is not None:
        body = _chunked(stream, limit)
        return Response(status, body, persistent and len(body) <= limit)
    if length is not None:
        if length > limit:
            return Response(status, _exactly(stream, limit + 1), False)
        return Response(status, _exactly(stream, length), persistent)
    return Response(status, stream.read(limit + 1), False)
