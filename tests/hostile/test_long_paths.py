"""Family 6: a state directory path of about 2 kB (nested) holding a corrupt state.json, and a
reboot request pending in Kubernetes.

The first tick finds the corrupt state: it must stop the worker with a documented block (exit
4, never 70), move the corrupt file aside (its bytes kept beside the new state) and record the
block in a state file it can read again. The next tick publishes the block: the Node report's
plan is `blocked`, and every message the worker sends to Kubernetes is clipped to the
contract's 2048 characters even though the path in it is longer (the apiserver refuses a
longer HostOperation status message with 422: no write of the case may be refused so). The
request is never acted on (no effect). `status --json` shows the block.

The kinds are the corruptions: garbage, truncated JSON, `[` x 100000, a value nested 2,000
levels, non-UTF-8, a JSON array or scalar instead of an object, a schema-less object, an empty
file, 65 MiB. Drawn from the case's rng: the path's shape (segments of 40 to 255 characters,
2,000 to 2,200 characters in all) and the corruption's details.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from magicstick_host.domain.text import MAX_MESSAGE
from tests.hostile import cases
from tests.hostile.cases import Case
from tests.hostile.checks import Verdict
from tests.hostile.rig import Rig

pytestmark = [pytest.mark.apiserver, pytest.mark.real_commands, pytest.mark.slow]

REPORT_KEY = "appliance.magicstick.dev/host-management"
CORRUPTIONS = ("garbage", "truncated", "deep-open", "deep-closed", "non-utf8", "not-an-object",
               "schema-less", "empty", "huge")
# fails at 77dd821 and d08bd8e (2 December): the state's reader calls .get on the document
XFAIL: dict[str, str] = {}


def long_state_dir(rng: random.Random, base: Path) -> Path:
    target = rng.randrange(2000, 2201)
    path = base
    while len(str(path)) < target:
        left = target - len(str(path)) - 1
        size = min(rng.randrange(40, 256), max(left, 1))
        path = path / ("d" * size)
    return path


def corrupt_bytes(how: str, rng: random.Random) -> tuple[bytes, str]:
    if how == "garbage":
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4096))), how
    if how == "truncated":
        doc = json.dumps({"schemaVersion": 2, "operation": None, "processed": [],
                          "block": None}).encode()
        return doc[: rng.randrange(1, len(doc))], how
    if how == "deep-open":
        return b"[" * 100_000, "'[' x 100000"
    if how == "deep-closed":
        return b'{"a":' * 2000 + b"1" + b"}" * 2000, "an object nested 2000 levels"
    if how == "non-utf8":
        return b'{"schemaVersion": "\xff\xfe\xc0"}', how
    if how == "not-an-object":
        body = rng.choice([b"[]", b"[{}]", b"5", b"null", b'"state"', b"true"])
        return body, f"{body!r}"
    if how == "schema-less":
        return json.dumps({"hostile": True, "operation": 5}).encode(), how
    if how == "empty":
        return b"", how
    return b" " * (65 * 1024 * 1024) + b"{}", "65 MiB of whitespace, then {}"


def messages(doc: Any, where: str = "") -> list[tuple[str, str]]:
    """Every string under a key named `message` (or ending in Message), with its location."""
    found: list[tuple[str, str]] = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            here = f"{where}.{key}"
            if isinstance(value, str) and (key == "message" or key.endswith("Message")):
                found.append((here, value))
            else:
                found += messages(value, here)
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            found += messages(value, f"{where}[{i}]")
    return found


@cases.parametrize("long-paths", CORRUPTIONS, 3, xfail=XFAIL)
def test_a_long_state_path_with_a_corrupt_state(case: Case, make_rig: Callable[..., Rig],
                                                tmp_path: Path) -> None:
    rng = case.rng()
    verdict = Verdict(case)
    state_dir = long_state_dir(rng, tmp_path / "s")
    state_dir.mkdir(parents=True, mode=0o700)
    state_dir.chmod(0o700)
    corrupt, how = corrupt_bytes(case.kind, rng)
    (state_dir / "state.json").write_bytes(corrupt)
    (state_dir / "state.json").chmod(0o600)
    verdict.note(f"state directory of {len(str(state_dir))} characters; state.json: {how} "
                 f"({len(corrupt)} bytes)")
    rig = make_rig(verdict, state_dir=state_dir)
    rig.request("reboot")

    rig.tick("tick-1 (corrupt state)", {4})
    state, error = rig.state()
    verdict.expect(state is not None and state.block is not None,
                   f"tick-1: no block recorded in a readable state file ({error or state})")
    kept = [p for p in state_dir.iterdir() if p.name.startswith("state.json") and
            p.name != "state.json" and p.is_file() and p.read_bytes() == corrupt]
    verdict.expect(bool(kept), "tick-1: the corrupt state file was not kept aside: "
                   f"{sorted(p.name for p in state_dir.iterdir())}")

    # the block is recorded now: the next tick publishes it and may end 0 (or 4 again)
    rig.tick("tick-2 (blocked)", {0, 4})
    code, status = rig.status_json()
    verdict.expect(code in (0, 4) and isinstance((status or {}).get("block"), dict),
                   f"status --json: exit {code}, no block shown ({str(status)[:300]})")
    node = rig.kube.read_node(rig.node_name)
    raw = (node["metadata"].get("annotations") or {}).get(REPORT_KEY)
    report = json.loads(raw) if raw else None
    verdict.expect(report is not None and report.get("plan", {}).get("state") == "blocked",
                   "tick-2: the Node report does not show the block "
                   f"({'no report' if report is None else report.get('plan')})")
    published = messages(report) + messages((rig.hostop() or {}).get("status"), "status")
    for where, text in published:
        verdict.expect(len(text) <= MAX_MESSAGE, f"{where}: a message of {len(text)} "
                       f"characters (clipped at {MAX_MESSAGE}): {text[:120]!r}...")
    longest = max((len(t) for _, t in published), default=0)
    verdict.note(f"{len(published)} published message(s), the longest {longest} characters")
    refused = [e for e in rig.proxy.log if e.method in ("PATCH", "PUT", "POST")
               and e.upstream_status == 422]
    verdict.expect(not refused, "the apiserver refused a write as invalid (422): "
                   f"{[(e.method, e.path) for e in refused]}")
    verdict.expect(not rig.effects(), f"a blocked worker acted: {rig.effects()}")
    rig.check_no_duplicates()
    verdict.done()
