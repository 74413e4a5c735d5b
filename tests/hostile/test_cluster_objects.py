"""Family 1: deep and huge JSON in cluster objects the worker reads, as the real apiserver
stores and serves them (no proxy tricks: the proxy only passes them through and logs).

- the HostOperation: its `status` keeps unknown fields (x-kubernetes-preserve-unknown-fields),
  so an admin, or anything with access to the status subresource, can put anything there
  beside the worker's fields; the spec is closed and immutable, so the status is where hostile
  JSON fits "within what the CRD allows";
- KubeAI `Model`s (tests/crds/kubeai-model-crd.yaml: spec and status keep unknown fields),
  which the worker lists in every namespace for the model-cache report and blockers; the tick
  after a boot lists them again (the blockers it keeps are keyed by the boot ID).

Shapes, drawn from the case's rng: nested 2,000 to 9,000 levels (the apiserver's own decoder
stops at 10,000), 20,000 to 100,000 keys, and long strings. One object is at most what etcd
takes in one request here (about 1.5 MiB, below the apiserver's 3 MiB request limit), so the
long-string cases put 2 or 3 such objects in one LIST answer (about 3 MiB).

The hostile objects appear after the reboot was scheduled; the tick after the boot must read
them (the proxy log shows the GET/LIST answered 200), exit 0 or 5 (never 70) within 30 s and
200 MB, and complete the reboot locally. The objects are then removed and a clean tick
publishes Succeeded; no write twice, no effect twice.
"""

from __future__ import annotations

import json
import random
import secrets
from collections.abc import Callable

import pytest

from tests.hostile import cases
from tests.hostile.cases import Case
from tests.hostile.checks import Verdict
from tests.hostile.rig import Rig

pytestmark = [pytest.mark.apiserver, pytest.mark.real_commands, pytest.mark.slow]

KINDS = ("status-deep", "models-wide", "status-long", "models-deep", "status-wide",
         "models-long")
MERGE = "application/merge-patch+json"
MODELS = "/apis/kubeai.org/v1/namespaces/{ns}/models"
# etcd's request limit here is about 1.5 MiB: one stored object stays below it
MAX_OBJECT_BYTES = 1_400_000


def deep(rng: random.Random, depth: int) -> bytes:
    """A value nested `depth` levels, as JSON text (Python's own encoder and decoder stop near
    1,000 levels, so it is never a Python object here)."""
    leaf = rng.choice([b"1", b'"leaf"', b"null", b"true"])
    how = rng.choice(["objects", "arrays", "mixed"])
    opens, closes = [], []
    for level in range(depth):
        as_list = how == "arrays" or (how == "mixed" and level % 2 == 1)
        opens.append(b"[" if as_list else b'{"a":')
        closes.append(b"]" if as_list else b"}")
    return b"".join(opens) + leaf + b"".join(reversed(closes))


def wide(rng: random.Random, keys: int) -> bytes:
    style = rng.choice(["plain", "odd"])
    values = [0, "v", None, False, [], {}]
    if style == "plain":
        doc = {f"k{i}": values[i % len(values)] for i in range(keys)}
    else:  # keys a JSON path or a label selector would trip over
        marks = [".", "/", "~", "[0]", "$", "\u00e9", "\U0001f600", " ", "\\", "\""]
        doc = {f"{marks[i % len(marks)]}{i}": values[i % len(values)] for i in range(keys)}
    return json.dumps(doc).encode()


def long_string(rng: random.Random, size: int) -> str:
    alphabet = rng.choice(["ascii", "multibyte", "escapes"])
    if alphabet == "ascii":
        return "x" * size
    if alphabet == "multibyte":
        unit = "\u00e9\u4e2d\U0001f600"  # 2, 3 and 4 bytes in UTF-8
        return unit * (size // 9)
    unit = "\"\\\n\t\u0001\u001f\u2028\u202e"  # escaped in JSON: about 6 bytes each
    return unit * (size // 40)


def hostile_value(kind: str, rng: random.Random, first: bool) -> tuple[bytes, str]:
    """The hostile member's value as JSON text, and what it is."""
    shape = kind.split("-", 1)[1]
    if shape == "deep":
        depth = 2000 if first else rng.randrange(2000, 9001)
        return deep(rng, depth), f"nested {depth} levels"
    if shape == "wide":
        keys = 100_000 if first else rng.randrange(20_000, 100_001)
        return wide(rng, keys), f"{keys} keys"
    size = rng.randrange(MAX_OBJECT_BYTES // 2, MAX_OBJECT_BYTES)
    value = {"s": long_string(rng, size), "t": ["\u0000" * 10, "\ud7ff", "0" * 1000]}
    return json.dumps(value).encode(), f"a string of about {size} bytes"


def raw_request(rig: Rig, method: str, path: str, data: bytes,
                content_type: str = "application/json") -> tuple[int, bytes]:
    """As the admin, with a body given as bytes and the answer left unparsed (both may be
    nested deeper than Python's json can handle), and a timeout for 100,000 keys on a loaded
    machine (the apiserver's managed fields make such a write take seconds)."""
    import urllib.error
    import urllib.request

    server = rig.kube.server
    req = urllib.request.Request(server.url + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {server.tokens['admin']}")
    req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=300, context=server._context("admin")) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def plant_in_status(rig: Rig, value: bytes, rng: random.Random) -> None:
    members = [b'"hostile":' + value]
    if rng.random() < 0.5:  # the message field, as long and as odd as the CRD allows
        members.append(b'"message":' + json.dumps(("\u202e\u0000 " + "m" * 2048)[:2048])
                       .encode())
    body = b'{"status":{' + b",".join(members) + b"}}"
    code, out = raw_request(rig, "PATCH", rig.hostop_path() + "/status", body, MERGE)
    assert code == 200, f"the apiserver did not store the hostile status: {code} {out[:300]!r}"


def remove_from_status(rig: Rig) -> None:
    code, out = raw_request(rig, "PATCH", rig.hostop_path() + "/status",
                            b'{"status":{"hostile":null}}', MERGE)
    assert code == 200, f"{code} {out[:300]!r}"


def plant_models(rig: Rig, kind: str, rng: random.Random, ns: str, first: bool) -> str:
    code, body = rig.kube.request("POST", "/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    assert code == 201, f"{code} {body!r:.300}"
    count = rng.randrange(2, 4) if kind.endswith("long") else rng.randrange(1, 3)
    what = []
    for i in range(count):
        value, label = hostile_value(kind, rng, first=first and i == 0)
        obj = (b'{"apiVersion":"kubeai.org/v1","kind":"Model","metadata":{"name":"hostile-%d"},'
               b'"spec":{"url":"hf://example/model","hostile":%s}}' % (i, value))
        code, out = raw_request(rig, "POST", MODELS.format(ns=ns), obj)
        assert code == 201, f"the apiserver did not store Model {i} ({label}): {code} " \
                            f"{out[:300]!r}"
        what.append(label)
    return f"{count} Model(s) in namespace {ns}: {'; '.join(what)}"


def drop_models(rig: Rig, ns: str) -> None:
    raw_request(rig, "DELETE", MODELS.format(ns=ns), b"")
    raw_request(rig, "DELETE", f"/api/v1/namespaces/{ns}", b"")


@cases.parametrize("cluster-objects", KINDS, 2)
def test_hostile_cluster_objects(case: Case, make_rig: Callable[..., Rig]) -> None:
    rng = case.rng()
    verdict = Verdict(case)
    rig = make_rig(verdict)
    ns = f"hostile-{secrets.token_hex(4)}"
    in_status = case.kind.startswith("status")
    try:
        if not rig.schedule_reboot():
            verdict.done()
            return
        rig.boot()
        if in_status:
            value, what = hostile_value(case.kind, rng, first=case.canonical)
            plant_in_status(rig, value, rng)
            verdict.note(f"the HostOperation's status holds a member {what} "
                         f"({len(value)} bytes as JSON)")
        else:
            verdict.note(plant_models(rig, case.kind, rng, ns, first=case.canonical))
        rig.tick("tick-2 (hostile objects)", {0, 5})
        read = [e for e in rig.proxy.requests_of("tick-2 (hostile objects)")
                if e.method == "GET" and e.upstream_status == 200 and (
                    ("/hostoperations/" in e.path) if in_status else ("/models" in e.path))]
        verdict.expect(bool(read), "tick-2: the worker never read the hostile object(s) "
                       "(no GET/LIST of them answered 200): the case tested nothing")
        rig.check_reboot_completed("tick-2 (hostile objects)")
    finally:
        if in_status:
            remove_from_status(rig)
        else:
            drop_models(rig, ns)
    rig.tick("tick-3 (clean)", {0})
    status = (rig.hostop() or {}).get("status") or {}
    verdict.expect(status.get("phase") == "Succeeded",
                   f"tick-3 (clean): the HostOperation's status is {status.get('phase')!r}, not "
                   "Succeeded")
    rig.check_no_duplicates()
    verdict.done()
