"""The lean transport's response reader reads what http.client reads (issue 15 replaced
http.client.HTTPResponse, whose header parsing imports the email package on every tick)."""

from __future__ import annotations

import http.client
import io
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magicstick_host.ports.http_response import BadResponse, read_response

LIMIT = 64

statuses = st.sampled_from([200, 201, 204, 304, 400, 401, 403, 404, 409, 410, 422, 429, 500, 503])
versions = st.sampled_from(["HTTP/1.1", "HTTP/1.0"])
connection = st.sampled_from([None, "close", "keep-alive", "Keep-Alive", "upgrade, close"])
framing = st.sampled_from(["length", "chunked", "until-close"])
bodies = st.binary(max_size=150)


def chunked(body: bytes, sizes: list[int], extension: bool) -> bytes:
    out = b""
    rest = body
    for size in sizes:
        if not rest:
            break
        part, rest = rest[:size], rest[size:]
        ext = b";name=value" if extension else b""
        out += f"{len(part):x}".encode() + ext + b"\r\n" + part + b"\r\n"
    if rest:
        out += f"{len(rest):X}".encode() + b"\r\n" + rest + b"\r\n"
    return out + b"0\r\nX-Trailer: t\r\n\r\n"


@st.composite
def responses(draw: Any) -> tuple[bytes, str]:
    version, status = draw(versions), draw(statuses)
    body, how = draw(bodies), draw(framing)
    method = draw(st.sampled_from(["GET", "GET", "PATCH", "HEAD"]))
    head = [f"{version} {status} {draw(st.sampled_from(['OK', 'Whatever', '']))}".rstrip()]
    if draw(st.booleans()):
        head.insert(0, "HTTP/1.1 100 Continue\r\n")  # an interim answer and its blank line
    head.append("Content-Type: application/json")
    if draw(st.booleans()):
        head.append("X-Repeated: a")
        head.append("x-repeated: b")
    conn = draw(connection)
    if conn is not None:
        head.append(f"{draw(st.sampled_from(['Connection', 'connection']))}: {conn}")
    payload = body
    if status in (204, 304) or method == "HEAD":
        # no body by definition (RFC 9112 6.3); HEAD's Content-Length is what GET would send
        body = payload = b""
        if how != "until-close":
            head.append(f"Content-Length: {draw(st.integers(0, 50)) if method == 'HEAD' else 0}")
    elif how == "length":
        head.append(f"Content-Length: {len(body)}")
    elif how == "chunked":
        head.append("Transfer-Encoding: chunked")
        sizes = draw(st.lists(st.integers(1, 40), max_size=6))
        payload = chunked(body, sizes, draw(st.booleans()))
    text = "\r\n".join(head) + "\r\n\r\n"
    return text.encode("latin-1") + payload, method


class FakeSocket:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(io.BytesIO(self.data))  # type: ignore[arg-type]


def stdlib_reading(data: bytes, method: str) -> tuple[int, bytes, bool]:
    response = http.client.HTTPResponse(FakeSocket(data), method=method)  # type: ignore[arg-type]
    response.begin()
    body = response.read(LIMIT + 1)
    return response.status, body, response.isclosed() and not response.will_close


@given(responses())
def test_status_body_and_reuse_are_those_http_client_reads(case: tuple[bytes, str]) -> None:
    data, method = case
    status, body, reusable = stdlib_reading(data, method)
    ours = read_response(io.BufferedReader(io.BytesIO(data)), method, LIMIT)
    assert (ours.status, ours.body) == (status, body)
    if len(body) <= LIMIT:
        assert ours.reusable == reusable
    else:  # a body over the limit is refused and its connection dropped
        assert not ours.reusable


@pytest.mark.parametrize("data", [
    b"",
    b"garbage\r\n\r\n",
    b"HTTP/1.1 20 OK\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
    b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\nab",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n",
    b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 101 + b"\r\n",
    b"HTTP/1.1 200 OK\r\nX: " + b"y" * 70000 + b"\r\n\r\n",
], ids=["empty", "garbage", "short-status", "short-body", "bad-length", "two-lengths",
        "bad-chunk-size", "short-chunk", "chunk-without-crlf", "bad-header", "no-blank-line",
        "too-many-headers", "long-header"])
def test_a_malformed_or_cut_answer_is_bad_response(data: bytes) -> None:
    with pytest.raises(BadResponse):
        read_response(io.BufferedReader(io.BytesIO(data)), "GET", LIMIT)


def test_a_chunked_body_over_the_limit_is_cut_at_limit_plus_one_and_not_reused() -> None:
    body = b"x" * 100
    data = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(body, [30] * 4,
                                                                               False)
    ours = read_response(io.BufferedReader(io.BytesIO(data)), "GET", LIMIT)
    assert ours.body == body[:LIMIT + 1]
    assert not ours.reusable
