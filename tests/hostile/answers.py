"""Hostile answers the proxy gives instead of the apiserver's, generated from a case's rng.

Bodies (family 2, `BODY_KINDS`): `[` x 200000 (and other deep prefixes), deep but closed
arrays and objects, a deep value inside the real object, a 64 MiB body, truncated JSON,
non-UTF-8, an array (or a scalar) instead of an object, duplicate keys, fields of the wrong
type. Heads (family 3, `HEAD_KINDS`): `HTTP/1.1 ²00`, `HTTP/1.1 099` and other codes,
`HTTP/1.1 200` without a reason, `Content-Length: ¹`, negative and huge Content-Length,
chunked bodies with bad sizes, a 1 MiB header line, 10,000 headers, the connection closed
inside the headers, and an endless stream of `100 Continue`.

Which request an answer replaces is drawn too (`target`): the Node GET, the HostOperation GET,
the HostOperation status PATCH, the Node report PATCH, a model-workload LIST, or simply the
n-th request of the tick; only that one or every matching one after it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator

from tests.hostile.proxy import Matcher, Message, Plan, split_answer

MIB = 1024 * 1024
HUGE_BODY = 64 * MIB

BODY_KINDS = ("deep-open", "deep-closed", "deep-inside", "huge-64mib", "truncated",
              "non-utf8", "not-an-object", "duplicate-keys", "wrong-types",
              "garbled-metadata")
HEAD_KINDS = ("status-superscript", "status-odd-code", "status-no-reason", "cl-superscript",
              "cl-negative", "cl-huge", "chunked-bad-size", "header-1mib", "headers-10k",
              "closed-mid-headers", "endless-interim")


def _path(m: Message) -> str:
    return m.path.split("?")[0]


TARGETS: dict[str, Matcher | None] = {
    "node-get": lambda m: m.method == "GET" and _path(m).startswith("/api/v1/nodes/"),
    "hostop-get": lambda m: m.method == "GET" and "/hostoperations/" in _path(m)
    and not _path(m).endswith("/status"),
    "status-patch": lambda m: m.method == "PATCH" and _path(m).endswith("/status")
    and "/hostoperations/" in _path(m),
    "node-patch": lambda m: m.method == "PATCH" and _path(m).startswith("/api/v1/nodes/"),
    "list": lambda m: m.method == "GET" and "limit=" in m.path,
    "nth": None,
}


def pick_target(rng: random.Random, canonical: bool) -> tuple[str, Matcher | None, int]:
    """Which request is hit; a canonical case hits the tick's first request (its Node GET)."""
    name = "nth" if canonical else rng.choice(sorted(TARGETS))
    at = rng.randrange(3) if name == "nth" and not canonical else 0
    return name, TARGETS[name], at


def head(status: str = "200 OK", headers: list[tuple[str, str]] | None = None,
         *, length: int | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status}", "Content-Type: application/json"]
    lines += [f"{k}: {v}" for k, v in headers or []]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def framed(body: bytes, *, status: str = "200 OK", chunked: bool = False,
           piece: int = MIB) -> Iterator[bytes]:
    if chunked:
        yield head(status, [("Transfer-Encoding", "chunked")])
        for at in range(0, len(body), piece):
            part = body[at:at + piece]
            yield f"{len(part):x}\r\n".encode() + part + b"\r\n"
        yield b"0\r\n\r\n"
        return
    yield head(status, length=len(body))
    for at in range(0, len(body), piece):
        yield body[at:at + piece]


def real_body(answer: Message | None) -> bytes:
    """The apiserver's body of a forwarded answer, de-chunked (or a plausible object)."""
    if answer is None:
        return b'{"kind":"Node","apiVersion":"v1","metadata":{"name":"x","uid":"u"}}'
    headers, body = split_answer(answer)
    if b"chunked" in headers.lower():
        out, rest = b"", body
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";")[0] or b"0", 16)
            if size == 0:
                break
            out, rest = out + rest[:size], rest[size + 2:]
        body = out
    return body or b"{}"


def _deep_value(rng: random.Random, depth: int) -> bytes:
    if rng.random() < 0.5:
        return b"[" * depth + b"1" + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


def _inject(real: bytes, member: bytes) -> bytes:
    """`member` ('"key":value') as the first member of the real top-level object."""
    real = real.strip()
    if not real.startswith(b"{"):
        return b"{" + member + b"}"
    inner = real[1:].lstrip()
    return b"{" + member + (b"," if not inner.startswith(b"}") else b"") + inner


BodyMaker = Callable[[random.Random, bytes, bool], tuple[bytes, str]]


def _deep_open(rng: random.Random, real: bytes, canonical: bool) -> tuple[bytes, str]:
    n = 200_000 if canonical or rng.random() < 0.5 else rng.randrange(2_000, 200_000)
    opener = b"[" if canonical else rng.choice([b"[", b'{"a":', b'[{"a":'])
    return opener * n, f"{opener.decode()!r} x {n}"


def _deep_closed(rng: random.Random, real: bytes, canonical: bool) -> tuple[bytes, str]:
    n = 2_000 if canonical else rng.choice([2_000, 10_000, rng.randrange(1_000, 100_000)])
    return _deep_value(rng, n), f"a closed value nested {n} levels"


def _deep_inside(rng: random.Random, real: bytes, canonical: bool) -> tuple[bytes, str]:
    n = 2_000 if canonical else rng.choice([2_000, 5_000, rng.randrange(1_000, 50_000)])
    return _inject(real, b'"hostile":' + _deep_value(rng, n)), \
        f"the real object with a member nested {n} levels"


def _huge(rng: random.Random, real: bytes, canonical: bool) -> tuple[bytes, str]:
    how = "string" if canonical else rng.choice(["string", "whitespace", "array"])
    if how == "string":
        pad = b'"pad":"' + b"x" * (HUGE_BODY - len(real) - 10) + b'"'
        return _inject(real, pad), "64 MiB: the real object with a 64 MiB string"
    if how == "whitespace":
        return b" " * (HUGE_BODY - len(real)) + real, "64 MiB: whitespace, then the object"
    count = (HUGE_BODY - len(real)) // 2
    return _inject(real, b'"pad":[' + b"0," * (count - 1) + b"0]"), \
        f"64 MiB: the real object with an array of {count} numbers"


def _truncated(rng: random.Random, real: bytes, canonical: bool) -> tuple[bytes, str]:
    cut = rng.randrange(1, max(2, len(real)))
    return real[:cut], f"the real answer cut after {cut} of {len(real)} bytes"


def _non_utf8(rng: random.Random, real: bytes, canonical: bool) -> tuple[bytes, str]:
    how = "invalid-bytes" if canonical else rng.choice(["invalid-bytes", "utf-16", "latin-1",
                                                         "lone-surrogate"])
    if how == "utf-16":
        return real.decode("utf-8", "replace").encode("utf-16"), "the real answer in UTF-16"
    if how == "latin-1":
        return _inject(real, '"hostile":"caf\u00e9 na\u00efve"'.encode("latin-1")), \
            "a Latin-1 string in the real object"
    if how == "lone-surrogate":
        return _inject(real, b'"hostile":"\\ud800\\udfff\\ud800"'), "lone surrogate escapes"
    junk = bytes(rng.choice([0xFF, 0xFE, 0xC0, 0x80, 0xED]) for _ in range(rng.randrange(1, 9)))
    at = real.find(b'"', len(real) // 2)
    at = at + 1 if at > 0 else len(real) // 2
    return real[:at] + junk + real[at:], f"{len(junk)} invalid UTF-8 bytes inside a string"


def _not_an_object(rng: random.Random, real: bytes, canonical: bool) -> tuple[bytes, str]:
    choices = [b"[" + real + b"]", b"[]", b'"a string"', b"null", b"42", b"true", b"1e999",
               b"NaN", b"-Infinity", b""]
    body = choices[0] if canonical else rng.choice(choices)
    return body, f"{body[:40]!r}{'...' if len(body) > 40 else ''} instead of an object"


def _duplicate_keys(rng: random.Random, real: bytes, canonical: bool) -> tuple[bytes, str]:
    """A duplicate of a key before the genuine one: a last-wins reader (Python's, Go's) reads the
    truth, a strict one refuses, a first-wins one would read the junk."""
    try:
        doc = json.loads(real)
    except ValueError:
        doc = {}
    keys = [k for k in (doc if isinstance(doc, dict) else {}) if k != "hostile"] or ["kind"]
    key = rng.choice(keys)
    junk = rng.choice([b'{"uid":"00000000-0000-0000-0000-000000000000","name":"other"}',
                       b"null", b"[]", b'"Status"', b"{}"])
    many = rng.random() < 0.3
    members = (b'"' + key.encode() + b'":' + junk) if not many else \
        b",".join([b'"' + key.encode() + b'":' + junk] * 50_000)
    return _inject(real, members), f"duplicate {key!r} before the genuine one" + \
        (" (50,000 times)" if many else "")


def _wrong_types(rng: random.Random, real: bytes, canonical: bool) -> tuple[bytes, str]:
    try:
        doc = json.loads(real)
    except ValueError:
        doc = {}
    if not isinstance(doc, dict):
        doc = {}
    key = rng.choice(["metadata", "status", "spec", "items", "kind"])
    junk = rng.choice([5, [], "text", None, True, {"annotations": [1, 2]}, {"uid": 7},
                       {"nodeInfo": "x"}])
    doc[key] = junk
    return json.dumps(doc).encode(), f"{key} = {json.dumps(junk)}"


def _garbled_metadata(rng: random.Random, real: bytes, canonical: bool) -> tuple[bytes, str]:
    """The object's metadata garbled: a UID that is no string, missing, or metadata that is no
    object. The worker decides "deleted and replaced" (its status writes end) and "the Node was
    recreated" (the operation stops) from metadata.uid: found by a deep run (seed 202), every
    status write of the request ended after one such answer."""
    try:
        doc = json.loads(real)
    except ValueError:
        doc = {}
    if not isinstance(doc, dict):
        doc = {}
    junk: object = {"uid": 7} if canonical else rng.choice(
        [{"uid": 7}, {"uid": ""}, {"name": "x"}, "text", 5, [], None,
         {**(doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}),
          "uid": "another-uid-" + str(rng.randrange(10**6))}])
    if isinstance(junk, dict) and str(junk.get("uid", "")).startswith("another-uid-"):
        # a well-formed other UID is a real "replaced": keep this case to garbled shapes only
        junk = {"uid": ["another"]}
    doc["metadata"] = junk
    return json.dumps(doc).encode(), f"metadata = {json.dumps(junk)}"


BODY_MAKERS: dict[str, BodyMaker] = {
    "deep-open": _deep_open, "deep-closed": _deep_closed, "deep-inside": _deep_inside,
    "huge-64mib": _huge, "truncated": _truncated, "non-utf8": _non_utf8,
    "not-an-object": _not_an_object, "duplicate-keys": _duplicate_keys,
    "wrong-types": _wrong_types, "garbled-metadata": _garbled_metadata,
}


def body_plan(kind: str, rng: random.Random, canonical: bool = False) -> Plan:
    target, match, at = pick_target(rng, canonical)
    # the canonical garbled-metadata case garbles every answer of the tick (seed 202's shape)
    rest = rng.random() < 0.4 or (canonical and kind == "garbled-metadata")
    chunked = rng.random() < 0.3
    status = rng.choice(["200 OK"] * 4 + ["201 Created"])
    then = rng.choice(["close", "keep"])
    label: list[str] = []

    def answer(request: Message, upstream: Message | None) -> Iterator[bytes]:
        body, what = BODY_MAKERS[kind](rng, real_body(upstream), canonical)
        if not label:
            label.append(what)
        yield from framed(body, status=status, chunked=chunked)

    return Plan(answer, at=at, rest=rest, match=match, then=then, details=label,
                label=f"{kind} on {target}#{at}{'+' if rest else ''} "
                      f"({'chunked' if chunked else 'Content-Length'}, then {then})")


# -- malformed heads --------------------------------------------------------------------------

Raw = tuple[Iterator[bytes], str]  # the bytes the worker gets, and what they are
HeadMaker = Callable[[random.Random, bytes, bool], Raw]


def _once(*parts: bytes) -> Iterator[bytes]:
    yield from parts


def _status_superscript(rng: random.Random, real: bytes, canonical: bool) -> Raw:
    # "²00" as the one byte 0xB2: three characters that str.isdigit() accepts and int() refuses
    code = "\u00b200" if canonical else rng.choice(["\u00b200", "2\u00b20", "\u00b9\u00b2\u00b3",
                                                    "\u0662\u0660\u0660"])
    encoding = "latin-1" if canonical else rng.choice(["latin-1", "utf-8"])
    try:
        line = f"HTTP/1.1 {code} OK\r\n".encode(encoding)
    except UnicodeEncodeError:
        encoding = "utf-8"
        line = f"HTTP/1.1 {code} OK\r\n".encode(encoding)
    rest = f"Content-Type: application/json\r\nContent-Length: {len(real)}\r\n\r\n".encode()
    return _once(line + rest + real), f"status line 'HTTP/1.1 {code} OK' in {encoding}"


def _status_odd_code(rng: random.Random, real: bytes, canonical: bool) -> Raw:
    line = rng.choice(["HTTP/1.1 099 Early", "HTTP/1.1 000 Zero", "HTTP/1.1 600 Beyond",
                       "HTTP/1.1 2000 OK", "HTTP/1.1 20 OK", "HTTP/1.1 -20 OK",
                       "HTTP/1.1 +20 OK", "HTTP/2 200 OK", "ICY 200 OK", "HTTP/1.1 2OO OK",
                       "\x16\x03\x01\x00\x05"])
    if canonical or rng.random() < 0.5:
        line = "HTTP/1.1 099 Early"
    head_ = f"{line}\r\nContent-Type: application/json\r\nContent-Length: {len(real)}\r\n\r\n"
    return _once(head_.encode("latin-1") + real), f"status line {line!r}"


def _status_no_reason(rng: random.Random, real: bytes, canonical: bool) -> Raw:
    line = "HTTP/1.1 200" if canonical else rng.choice(["HTTP/1.1 200", "HTTP/1.1 200 ",
                                                         "HTTP/1.1 200\t"])
    head_ = f"{line}\r\nContent-Type: application/json\r\nContent-Length: {len(real)}\r\n\r\n"
    return _once(head_.encode("latin-1") + real), f"status line {line!r} (no reason phrase)"


def _cl_superscript(rng: random.Random, real: bytes, canonical: bool) -> Raw:
    value = "\u00b9" if canonical else rng.choice(["\u00b9", "\u00b2\u00b3", "\u0661",
                                                  f"{len(real)}\u00b9"])
    encoding = "latin-1" if canonical else rng.choice(["latin-1", "utf-8"])
    try:
        field = f"Content-Length: {value}\r\n".encode(encoding)
    except UnicodeEncodeError:
        encoding = "utf-8"
        field = f"Content-Length: {value}\r\n".encode(encoding)
    return _once(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + field + b"\r\n"
                 + real), f"Content-Length: {value!r} in {encoding}"


def _cl_negative(rng: random.Random, real: bytes, canonical: bool) -> Raw:
    choices = ["-1", f"-{len(real)}", "-0", "-99999999999999999999", " -5 "]
    value = choices[0] if canonical else rng.choice(choices)
    return _once(head(length=None, headers=[("Content-Length", value)]) + real), \
        f"Content-Length: {value!r}"


def _cl_huge(rng: random.Random, real: bytes, canonical: bool) -> Raw:
    choices = [str(2**63), str(2**64 + 1), "9" * 40, str(64 * MIB), str(10**12),
               f"{len(real)}, {len(real) + 1}"]
    value = choices[0] if canonical else rng.choice(choices)
    return _once(head(headers=[("Content-Length", value)]) + real), \
        f"Content-Length: {value} with {len(real)} body bytes, then the connection closes"


def _chunked_bad(rng: random.Random, real: bytes, canonical: bool) -> Raw:
    choices = ["zz", "-5", "0x10", "F" * 20, "\u00b9", "1;" + "a" * 70_000, "", "+10", " 1 0",
               "big-then-close", "no-crlf"]
    size = choices[0] if canonical else rng.choice(choices)
    h = head(headers=[("Transfer-Encoding", "chunked")])
    if size == "big-then-close":
        return _once(h + f"{len(real) * 4:x}\r\n".encode() + real), \
            "a chunk larger than the bytes sent, then the connection closes"
    if size == "no-crlf":
        return _once(h + f"{len(real):x}\r\n".encode() + real + b"XX0\r\n\r\n"), \
            "a chunk without its CRLF"
    return _once(h + size.encode("utf-8") + b"\r\n" + real + b"\r\n0\r\n\r\n"), \
        f"chunk size {size[:20]!r}{'...' if len(size) > 20 else ''}"


def _header_1mib(rng: random.Random, real: bytes, canonical: bool) -> Raw:
    n = MIB if canonical else rng.choice([MIB, MIB + rng.randrange(1, 1000), 4 * MIB])
    value = b"a" * n
    return _once(b"HTTP/1.1 200 OK\r\nX-Junk: " + value + b"\r\n"
                 + f"Content-Type: application/json\r\nContent-Length: {len(real)}\r\n\r\n"
                 .encode() + real), f"a header line of {n} bytes"


def _headers_10k(rng: random.Random, real: bytes, canonical: bool) -> Raw:
    n = 10_000 if canonical else rng.choice([10_000, rng.randrange(101, 100_000)])
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(n))
    return _once(b"HTTP/1.1 200 OK\r\n" + many
                 + f"Content-Type: application/json\r\nContent-Length: {len(real)}\r\n\r\n"
                 .encode() + real), f"{n} header lines"


def _closed_mid_headers(rng: random.Random, real: bytes, canonical: bool) -> Raw:
    full = head(length=len(real))
    cut = rng.randrange(1, len(full) - 2)
    return _once(full[:cut]), f"the connection closed after {cut} bytes of the head"


def _endless_interim(rng: random.Random, real: bytes, canonical: bool) -> Raw:
    line = b"HTTP/1.1 100 Continue\r\n\r\n" if canonical else rng.choice([
                      b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 102 Processing\r\n\r\n",
                       b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"])

    def stream() -> Iterator[bytes]:
        while True:
            yield line * 64

    first = line.split(b"\r\n")[0].decode()
    return stream(), f"{first} without end"


HEAD_MAKERS: dict[str, HeadMaker] = {
    "status-superscript": _status_superscript, "status-odd-code": _status_odd_code,
    "status-no-reason": _status_no_reason, "cl-superscript": _cl_superscript,
    "cl-negative": _cl_negative, "cl-huge": _cl_huge, "chunked-bad-size": _chunked_bad,
    "header-1mib": _header_1mib, "headers-10k": _headers_10k,
    "closed-mid-headers": _closed_mid_headers, "endless-interim": _endless_interim,
}


def head_plan(kind: str, rng: random.Random, canonical: bool = False) -> Plan:
    target, match, at = pick_target(rng, canonical)
    # an endless stream holds one request until the worker's deadline: once, not for all
    rest = kind != "endless-interim" and rng.random() < 0.4
    label: list[str] = []

    def answer(request: Message, upstream: Message | None) -> Iterator[bytes]:
        pieces, what = HEAD_MAKERS[kind](rng, real_body(upstream), canonical)
        if not label:
            label.append(what)
        yield from pieces

    return Plan(answer, at=at, rest=rest, match=match, then="close", details=label,
                label=f"{kind} on {target}#{at}{'+' if rest else ''}")
