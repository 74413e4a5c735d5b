"""The lean transport reads each answer with http.client.HTTPResponse (issue 26: our own reader,
ports/http_response.py, saved under 10% of the idle tick and is gone). Whatever the server
sends, the transport's reading function (kube_http.read_response) gives a Response or
BadResponse (which the transport turns into KubeTemporaryError: exit 5, "cannot tell"), never
another exception; and a Response is what the running interpreter's http.client reads from the
same bytes:
- a body within the limit: the status and the body of http.client's read() of the whole
  answer, and the connection kept exactly when http.client keeps it (the body wholly read and
  not will_close);
- a body over the limit: its first limit + 1 bytes, as http.client's read(limit + 1) gives
  them, and the connection dropped (the transport refuses the answer);
- BadResponse only where http.client's read() raises (a bad status line, a line too long, too
  many headers, a body that ends before its Content-Length or its chunks), or past the bounds
  on what an answer may hold (MAX_HEAD_BYTES beyond the limit, tested on its own below).
The oracle is the interpreter the suite runs under (3.11 here, Debian's 3.14 in make
test-py314): where their http.client differs (100 interim answers at most, and 100 trailer
lines, in 3.14), these tests follow the one that runs.
"""

from __future__ import annotations

import http.client
import io
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magicstick_host.ports.kube_http import (
    MAX_HEAD_BYTES,
    BadResponse,
    Response,
    read_response,
)

LIMIT = 48


class _Socket:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(io.BytesIO(self.data))


def http_client_reads(data: bytes, method: str, amount: int | None
                      ) -> tuple[int, bytes, bool] | Exception:
    """http.client's own reading of `data`: (status, body, connection kept), or what it
    raises. Only HTTPException, ValueError and OverflowError are expected (the last for a chunk
    size past sys.maxsize, read whole, which the generated answers found): anything else fails
    the test."""
    response = http.client.HTTPResponse(_Socket(data), method=method)  # type: ignore[arg-type]
    try:
        response.begin()
        body = response.read(amount)
        kept = response.isclosed() and not response.will_close
    except (http.client.HTTPException, ValueError, OverflowError) as exc:
        return exc
    finally:
        response.close()
    return response.status, body, kept


def ours(data: bytes, method: str = "GET", limit: int = LIMIT) -> Response | BadResponse:
    try:
        return read_response(io.BytesIO(data), method, limit)
    except BadResponse as exc:  # any other exception fails the test
        return exc


def check(data: bytes, method: str) -> Response | BadResponse:
    """Ours against http.client on the same bytes; returns ours."""
    mine = ours(data, method)
    whole = http_client_reads(data, method, None)
    if isinstance(mine, BadResponse):
        assert isinstance(whole, Exception), f"refused what http.client reads: {mine}"
        return mine
    if len(mine.body) > LIMIT:
        cut = http_client_reads(data, method, LIMIT + 1)
        assert not isinstance(cut, Exception), cut
        assert (mine.status, mine.body) == cut[:2]
        assert not mine.reusable, "kept the connection of a refused answer"
        return mine
    assert not isinstance(whole, Exception), f"read what http.client refuses: {whole!r}"
    assert (mine.status, mine.body, mine.reusable) == whole
    return mine


# -- generated answers ---------------------------------------------------------------------

VERSIONS = ["HTTP/1.1", "HTTP/1.0", "HTTP/1.10", "HTTP/0.9", "HTTP/2", "http/1.1", "HTTP/1.", ""]
STATUSES = ["200", "201", "204", "304", "404", "500", "100", "101", "103", "099", "000", "1000",
            "abc", "²00", "1_00", "+200", "-20", "20", "2OO", "999", " 200"]
REASONS = ["OK", "", "Not Found", "a b  c", "\xa0x"]
NAMES = ["Content-Length", "content-length", "Transfer-Encoding", "transfer-encoding",
         "Connection", "Keep-Alive", "X-Thing", "Content-Length ", " X", "", "Bad Name"]
VALUES = ["0", "5", "12", "64", "100", "²", "¹", "5, 5", "5,6", " 5 ", "5 ", "-1", "+1", "+5",
          "1_0", "0x5", "", "99999999999999999999", "1" * 5000, "chunked", "Chunked",
          "chunked ", "gzip, chunked", "chunked, gzip", "identity", "close", "keep-alive",
          "Keep-Alive", "closed", "upgrade, close", "x\ry", "timeout=5"]
ENDS = ["\r\n", "\r\n", "\r\n", "\n", "\r", "\r\r\n"]
# around http.client's 65536-byte line limit (the line end included)
LONG = [65530, 65533, 65534, 65535, 70000]


@st.composite
def header_line(draw: Any) -> str:
    kind = draw(st.integers(0, 19))
    end = draw(st.sampled_from(ENDS))
    if kind == 0:
        return draw(st.sampled_from([" folded", "\tfolded", "no colon", "From x"])) + end
    if kind == 1:
        return "X-Long: " + "y" * draw(st.sampled_from(LONG)) + end
    sep = draw(st.sampled_from([": ", ":", ":\t", " : "]))
    return draw(st.sampled_from(NAMES)) + sep + draw(st.sampled_from(VALUES)) + end


@st.composite
def chunk_body(draw: Any) -> bytes:
    """Chunks with sizes good and bad: cut, too large, negative, not hex, not ended by CRLF."""
    out = b""
    for _ in range(draw(st.integers(0, 4))):
        data = draw(st.binary(max_size=30))
        size = draw(st.sampled_from([f"{len(data):x}", f"{len(data):X}", f"{len(data):x};e=1",
                                     f" {len(data):x} ", f"0x{len(data):x}", "zz", "-1", "-0",
                                     f"+{len(data):x}", f"{len(data) + 1:x}", "f" * 20,
                                     "1" * 70000]))
        tail = draw(st.sampled_from([b"\r\n", b"\r\n", b"\n", b"XY", b""]))
        out += size.encode() + draw(st.sampled_from([b"\r\n", b"\n"])) + data + tail
    if draw(st.booleans()):
        out += b"0\r\n" + draw(st.sampled_from([b"", b"T: t\r\n", b"T: t\n"])) + b"\r\n"
    return out


@st.composite
def good_chunks(draw: Any, body: bytes) -> bytes:
    out, rest = b"", body
    while rest:
        size = draw(st.integers(1, 30))
        part, rest = rest[:size], rest[size:]
        ext = draw(st.sampled_from([b"", b";name=value"]))
        out += f"{len(part):x}".encode() + ext + b"\r\n" + part + b"\r\n"
    return out + b"0\r\n" + draw(st.sampled_from([b"", b"X-Trailer: t\r\n"])) + b"\r\n"


@st.composite
def answers(draw: Any) -> bytes:
    """Well-formed answers (a framing that fits the body, bodies under and over the limit),
    and a third of noisy ones: bad versions, statuses, header lines, lengths and chunks, too
    many headers, over-long lines, missing blank lines, bytes changed, dropped or added."""
    noisy = draw(st.integers(0, 2)) == 0
    head = ""
    if draw(st.integers(0, 4)) == 0:
        head += f"{draw(st.sampled_from(VERSIONS[:2] if not noisy else VERSIONS))} 100 Continue"
        head += "\r\n" + "".join(draw(st.lists(header_line(), max_size=1))) + "\r\n"
    version = draw(st.sampled_from(VERSIONS if noisy else VERSIONS[:2]))
    status = draw(st.sampled_from(STATUSES if noisy else STATUSES[:6]))
    head += " ".join(p for p in (version, status, draw(st.sampled_from(REASONS))) if p)
    head += draw(st.sampled_from(ENDS)) if noisy else "\r\n"
    lines = draw(st.lists(header_line(), max_size=4)) if noisy else []
    if noisy and draw(st.integers(0, 9)) == 0:  # http.client takes at most 100 header lines
        lines += [f"X-{n}: v\r\n" for n in range(draw(st.sampled_from([98, 99, 100, 101])))]
    body = draw(st.binary(max_size=40) | st.binary(min_size=LIMIT - 2, max_size=LIMIT + 30))
    framing = draw(st.sampled_from(["length", "chunked", "close"]))
    if framing == "length":
        lines.append(f"Content-Length: {len(body)}\r\n")
    elif framing == "chunked":
        lines.append("Transfer-Encoding: chunked\r\n")
        body = draw(chunk_body()) if noisy else draw(good_chunks(body))
    lines.append(draw(st.sampled_from(["", "", "Connection: close\r\n",
                                       "Connection: keep-alive\r\n", "Keep-Alive: t=5\r\n"])))
    head += "".join(draw(st.permutations(lines)))
    if not noisy or draw(st.integers(0, 9)):
        head += draw(st.sampled_from(["\r\n", "\n"]))
    data = head.encode("latin-1") + body
    for _ in range(draw(st.integers(0, 2)) if noisy else 0):
        at = draw(st.integers(0, len(data)))
        byte = bytes([draw(st.integers(0, 255))])
        how = draw(st.integers(0, 2))
        data = data[:at] + (byte if how != 1 else b"") + data[at + (how != 2):]
    if noisy and draw(st.integers(0, 4)) == 0:  # cut anywhere
        data = data[:draw(st.integers(0, len(data)))]
    return data


METHODS = st.sampled_from(["GET", "GET", "PATCH", "HEAD"])


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answers(), METHODS)
def test_every_generated_answer_is_what_http_client_reads_or_bad_response(
        data: bytes, method: str) -> None:
    check(data, method)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200), METHODS)
def test_any_bytes_give_a_response_or_bad_response(data: bytes, method: str) -> None:
    check(data, method)


def test_the_generated_answers_are_read_and_refused_both() -> None:
    """The generator is not only noise nor only good answers: of a sample, many are read
    (some over the limit) and many refused."""
    outcomes: list[str] = []

    @settings(max_examples=300, deadline=None, database=None, derandomize=True)
    @given(answers())
    def count(data: bytes) -> None:
        mine = ours(data)
        outcomes.append("refused" if isinstance(mine, BadResponse)
                        else "over" if len(mine.body) > LIMIT else "read")

    count()
    assert outcomes.count("read") > 30
    assert outcomes.count("refused") > 30
    assert outcomes.count("over") > 5


# -- named answers -------------------------------------------------------------------------


def test_a_content_length_of_superscript_two_is_read_until_the_close() -> None:
    """Issue 26: "²" (0xB2) passed str.isdigit and int() raised an uncaught ValueError, exit
    70. http.client's int() fails on it and frames the body by the connection's end."""
    data = b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\nab"
    mine = check(data, "GET")
    assert isinstance(mine, Response)
    assert (mine.status, mine.body, mine.reusable) == (200, b"ab", False)


def test_status_099_is_bad_response_as_http_client_refuses_it() -> None:
    """Our reader once took 099 for 99; http.client refuses a status under 100."""
    data = b"HTTP/1.1 099 OK\r\nContent-Length: 0\r\n\r\n"
    assert isinstance(http_client_reads(data, "GET", None), http.client.BadStatusLine)
    assert isinstance(check(data, "GET"), BadResponse)


OK = b"HTTP/1.1 200 OK\r\n"
CHUNKED = OK + b"Transfer-Encoding: chunked\r\n\r\n"
# each: the bytes, and what is read (status, body, connection kept) or BadResponse
NAMED: dict[str, tuple[bytes, tuple[int, bytes, bool] | type[BadResponse]]] = {
    "empty": (b"", BadResponse),
    "garbage": (b"garbage\r\n\r\n", BadResponse),
    "status-abc": (b"HTTP/1.1 abc OK\r\nContent-Length: 0\r\n\r\n", BadResponse),
    "short-status": (b"HTTP/1.1 20 OK\r\n\r\n", BadResponse),
    "status-999": (b"HTTP/1.1 999 Odd\r\nContent-Length: 2\r\n\r\n{}", (999, b"{}", True)),
    "short-body": (OK + b"Content-Length: 10\r\n\r\nshort", BadResponse),
    "length-plus-one": (OK + b"Content-Length: +1\r\n\r\nab", (200, b"a", True)),
    "length-underscore": (OK + b"Content-Length: 1_0\r\n\r\nab", BadResponse),
    "length-minus-one": (OK + b"Content-Length: -1\r\n\r\nab", (200, b"ab", False)),
    "length-not-a-number": (OK + b"Content-Length: x\r\n\r\nab", (200, b"ab", False)),
    "length-huge": (OK + b"Content-Length: 99999999999999999999\r\n\r\nab", BadResponse),
    "length-list": (OK + b"Content-Length: 1, 2\r\n\r\nab", (200, b"ab", False)),
    "chunked": (CHUNKED + b"2\r\nab\r\n0\r\n\r\n", (200, b"ab", True)),
    "chunk-size-not-hex": (CHUNKED + b"zz\r\n", BadResponse),
    "chunk-size-negative": (CHUNKED + b"-1\r\nab\r\n0\r\n\r\n", BadResponse),
    "chunk-cut": (CHUNKED + b"5\r\nab", BadResponse),
    "chunk-size-past-maxsize": (CHUNKED + b"f" * 20 + b"\r\nab\r\n0\r\n\r\n", BadResponse),
    "chunk-size-line-too-long": (CHUNKED + b"1" * 70000 + b"\r\n", BadResponse),
    # http.client drops the two bytes after a chunk, whatever they are
    "chunk-without-crlf": (CHUNKED + b"2\r\nabXY0\r\n\r\n", (200, b"ab", True)),
    "no-blank-line": (OK + b"Content-Length: 0\r\n", (200, b"", True)),
    "too-many-headers": (OK + b"X: y\r\n" * 101 + b"\r\n", BadResponse),
    "header-line-too-long": (OK + b"X: " + b"y" * 70000 + b"\r\n\r\n", BadResponse),
    "head": (OK + b"Content-Length: 40\r\n\r\n", (200, b"", True)),
    "no-content": (b"HTTP/1.1 204 No Content\r\n\r\n", (204, b"", True)),
    "http-1.0-closes": (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", (200, b"{}", False)),
    "connection-close": (OK + b"Connection: close\r\nContent-Length: 2\r\n\r\n{}",
                         (200, b"{}", False)),
    "continue-then-answer": (b"HTTP/1.1 100 Continue\r\n\r\n" + OK + b"Content-Length: 2\r\n"
                             b"\r\n{}", (200, b"{}", True)),
}


@pytest.mark.parametrize("case", sorted(NAMED))
def test_a_named_answer_is_read_or_refused_as_http_client_does(case: str) -> None:
    data, expected = NAMED[case]
    method = "HEAD" if case == "head" else "GET"
    mine = check(data, method)
    if expected is BadResponse:
        assert isinstance(mine, BadResponse)
    else:
        assert isinstance(mine, Response)
        assert (mine.status, mine.body, mine.reusable) == expected


@pytest.mark.parametrize("framing", ["length", "chunked", "close"])
def test_a_body_over_the_limit_is_cut_at_limit_plus_one_and_not_reused(framing: str) -> None:
    body = b"x" * 100
    if framing == "length":
        data = OK + b"Content-Length: 100\r\n\r\n" + body
    elif framing == "chunked":
        data = CHUNKED + b"".join(b"1e\r\n" + body[i:i + 30] + b"\r\n" for i in (0, 30, 60))
        data += b"a\r\n" + body[90:] + b"\r\n0\r\n\r\n"
    else:
        data = OK + b"\r\n" + body
    source = io.BytesIO(data)
    mine = read_response(source, "GET", LIMIT)
    assert (mine.status, mine.body, mine.reusable) == (200, body[:LIMIT + 1], False)
    check(data, "GET")


def test_a_negative_chunk_size_reads_no_more_than_the_bounds() -> None:
    """http.client reads a chunk of size -1 to the connection's end (3.11 and 3.14 alike):
    the transport's reader stops at the limit + MAX_HEAD_BYTES and refuses the answer."""
    data = CHUNKED + b"-1\r\n" + b"x" * (LIMIT + MAX_HEAD_BYTES + 65536)
    source = io.BytesIO(data)
    with pytest.raises(BadResponse, match="longer than its bounds"):
        read_response(source, "GET", LIMIT)
    assert source.tell() <= LIMIT + 1 + MAX_HEAD_BYTES


def test_an_endless_run_of_interim_answers_is_bad_response() -> None:
    """3.11's http.client skips 100 Continue answers without end (3.14 stops at 100): either
    way, the transport's reader refuses them once past its bounds."""
    interim = b"HTTP/1.1 100 Continue\r\n\r\n"
    data = interim * ((LIMIT + MAX_HEAD_BYTES) // len(interim) + 2) + OK + b"\r\n"
    source = io.BytesIO(data)
    with pytest.raises(BadResponse):
        read_response(source, "GET", LIMIT)
    assert source.tell() <= LIMIT + 1 + MAX_HEAD_BYTES
