"""The hostile parts of the soak's schedule (issue #24), made with the hostile suite's generators
(tests/hostile): what the fault proxy answers instead of the apiserver, the KubeAI Models
nested 2,000 levels or 100,000 keys wide, the scan for tool processes that outlive a tick, and
the memos planted in the tick's $RUNTIME_DIRECTORY.

- answers (`hostile_answer`, the proxy's HOSTILE_KINDS): each kind's canonical case of
  tests/hostile/answers.py (`[` x 200000, a value nested 2,000 levels, the real answer inside an
  array, `HTTP/1.1 ²00` as the one byte 0xB2, `HTTP/1.1 099`, `Content-Length: ¹`, 10,000
  header lines), and a 33 MiB body streamed a MiB at a time (never built in memory);
- Models (`plant_model`): a `models.kubeai.org` object whose spec holds a member nested 2,000
  levels or one of 20,000 keys (tests/hostile/test_cluster_objects.py's `deep` and `wide`;
  100,000 keys took the test apiserver past its own 60 s request timeout on the loaded
  machine), created as the administrator in the soak's namespace for hostile objects, deleted a
  few ticks later; one the apiserver refuses (a 504 under load) is counted, not an error;
- tool processes (`marked_processes`): sim/faults.py puts HOSTILE_TOOL_ENV=<host root> in the
  environment of every hostile tool process, which its children inherit;
- memos (`plant_memo`): the worker's own kubeconfig memo with the server changed to the
  host's decoy listener: edited in place (root 0600, so only its seal stands in the way), the
  edited memo owned by nobody with mode 0666, or $RUNTIME_DIRECTORY a symlink to a 0777
  directory holding it.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from magicstick_host.sim.faults import HOSTILE_TOOL_ENV
from tests.hostile.answers import BODY_MAKERS, HEAD_MAKERS, MIB, framed, head, real_body
from tests.hostile.test_cluster_objects import deep, wide
from tests.soak.httpio import Message

KILL_RESCAN_S = 2.0  # kill_marked scans again, for at most this long, until none is left
HUGE_BYTES = 33 * MIB  # past the worker's 32 MiB limit on one answer
_BODIES = {"deep-open": "deep-open", "deep-2000": "deep-closed", "not-an-object": "not-an-object"}
_HEADS = {"status-superscript": "status-superscript", "status-099": "status-odd-code",
          "cl-superscript": "cl-superscript", "header-flood": "headers-10k"}


def hostile_answer(kind: str, answer: Message | None) -> Iterator[bytes]:
    """The bytes the worker gets instead of the apiserver's `answer`."""
    real = real_body(answer)
    rng = random.Random(kind)  # the canonical cases draw nothing that matters
    if kind in _BODIES:
        body, _ = BODY_MAKERS[_BODIES[kind]](rng, real, True)
        yield from framed(body)
    elif kind in _HEADS:
        pieces, _ = HEAD_MAKERS[_HEADS[kind]](rng, real, True)
        yield from pieces
    elif kind == "huge-33mib":
        yield head(length=HUGE_BYTES)
        yield b'{"pad":"'
        left = HUGE_BYTES - len(b'{"pad":"') - len(b'"}')
        chunk = b"x" * MIB
        while left > 0:
            piece = chunk[:left]
            left -= len(piece)
            yield piece
        yield b'"}'
    else:
        raise ValueError(f"not a hostile answer: {kind!r}")


# -- tool processes ---------------------------------------------------------------------------


def marked_processes(marker: str) -> list[str]:
    """The live processes whose environment has HOSTILE_TOOL_ENV=`marker`: 'pid argv'.

    A process in the middle of an execve is missed by one scan: from the switch to the new
    image until its stack is laid out, the kernel shows it with no environment and no argv
    (/proc/PID/environ reads empty while mm->env_end is 0). A caller that must see every such
    process scans again (kill_marked does)."""
    needle = f"\0{HOSTILE_TOOL_ENV}={marker}\0".encode()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                environ = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read()
        except OSError:
            continue
        if needle in b"\0" + environ + b"\0":
            shown = argv.replace(b"\0", b" ").decode(errors="replace")[:200]
            out.append(f"{name} {shown}")
    return out


def pid_of(line: str) -> int:
    """The pid of one of marked_processes' 'pid argv' lines."""
    return int(line.split(" ", 1)[0])


def kill_marked(marker: str) -> int:
    """SIGKILL what is left of the hostile tools of a tick the soak SIGKILLed (systemd's
    KillMode=control-group would); how many there were."""
    killed: set[int] = set()
    # until a scan finds none left: one that ran while a tool was exec'ing did not see it
    # (marked_processes); bounded, since a tool that keeps forking would otherwise hold us
    until = time.monotonic() + KILL_RESCAN_S
    while (alive := {pid_of(line) for line in marked_processes(marker)}):
        for pid in alive:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        killed |= alive
        if time.monotonic() >= until:
            break
        time.sleep(0.01)
    return len(killed)


def leftovers(marker: str, grace_s: float = 2.0) -> list[str]:
    """The marked processes still alive `grace_s` after the tick's end (a SIGKILL takes a
    moment to be done with)."""
    until = time.monotonic() + grace_s
    while True:
        found = marked_processes(marker)
        if not found or time.monotonic() >= until:
            return found
        time.sleep(0.1)


# -- KubeAI Models ----------------------------------------------------------------------------

MODEL_KINDS = ("model-deep-2000", "model-wide-20k")
WIDE_KEYS = 20_000
MODELS = "/apis/kubeai.org/v1/namespaces/{ns}/models"


def _admin(cluster: Any, method: str, path: str, data: bytes | None,
           content_type: str = "application/json") -> tuple[int, bytes]:
    server = cluster.server
    req = urllib.request.Request(server.url + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {server.tokens['admin']}")
    req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=300, context=server._context("admin")) as resp:
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as err:
        return int(err.code), err.read()


def ensure_namespace(cluster: Any, ns: str) -> None:
    code, body = cluster.request("POST", "/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    if code not in (201, 409):
        raise AssertionError(f"namespace {ns}: HTTP {code}: {body!r:.300}")


def plant_model(cluster: Any, ns: str, name: str, kind: str, rng: random.Random) -> str | None:
    """Create the hostile Model; None when stored, else why the apiserver did not (it may
    still have stored it: the caller deletes it all the same)."""
    value = deep(rng, 2000) if kind == "model-deep-2000" else wide(rng, WIDE_KEYS)
    obj = (b'{"apiVersion":"kubeai.org/v1","kind":"Model","metadata":{"name":"%s"},'
           b'"spec":{"url":"hf://example/model","hostile":%s}}' % (name.encode(), value))
    try:
        code, out = _admin(cluster, "POST", MODELS.format(ns=ns), obj)
    except OSError as exc:  # urllib's timeout, a reset
        return f"{type(exc).__name__}: {exc}"
    return None if code == 201 else f"HTTP {code}: {out[:200]!r}"


def delete_model(cluster: Any, ns: str, name: str) -> None:
    code, out = _admin(cluster, "DELETE", MODELS.format(ns=ns) + f"/{name}", None)
    if code not in (200, 202, 404):
        raise AssertionError(f"deleting Model {ns}/{name}: {code} {out[:300]!r}")


# -- memos ------------------------------------------------------------------------------------

MEMO_KINDS = ("memo-edited", "memo-foreign", "memo-dir-symlink")
MEMO = "kubeconfig.json"
NOBODY = 65534


@dataclass
class Planted:
    kind: str
    runtime: Path  # the tick's $RUNTIME_DIRECTORY
    path: Path  # the planted memo
    data: bytes
    extra: tuple[Path, ...] = ()  # made for this tick only: removed after it


def plant_memo(kind: str, runtime: Path, scratch: Path, proxy_url: str,
               decoy_port: int) -> Planted | None:
    """The worker's kubeconfig memo in `runtime` (root 0700), its server the decoy's, planted as
    `kind` says; None when the worker has no memo there yet (after a boot emptied it)."""
    own = runtime / MEMO
    try:
        raw = own.read_bytes()
    except FileNotFoundError:
        return None
    if proxy_url.encode() not in raw:
        raise AssertionError(f"{own} does not name the server {proxy_url}: {raw[:200]!r}")
    edited = raw.replace(proxy_url.encode(), f"https://127.0.0.1:{decoy_port}".encode())
    if kind == "memo-edited":
        own.write_bytes(edited)  # still root 0600: a memo only root could have written
        return Planted(kind, runtime, own, edited)
    if kind == "memo-foreign":
        own.unlink()
        own.write_bytes(edited)
        os.chown(own, NOBODY, NOBODY)
        own.chmod(0o666)
        return Planted(kind, runtime, own, edited)
    if kind != "memo-dir-symlink":
        raise ValueError(kind)
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    open_dir, link = scratch / "open", scratch / "runtime-link"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    for name in os.listdir(runtime):  # the worker's other memos, as they were
        source = runtime / name
        if source.is_file() and not source.is_symlink():
            shutil.copyfile(source, open_dir / name)
            (open_dir / name).chmod(0o600)
    (open_dir / MEMO).write_bytes(edited)
    (open_dir / MEMO).chmod(0o600)
    link.symlink_to(open_dir, target_is_directory=True)
    return Planted(kind, link, open_dir / MEMO, edited, extra=(scratch,))


def unplant(planted: Planted) -> bool:
    """Remove what was planted; True if the planted memo was still there, unchanged (the worker
    neither used nor replaced it)."""
    try:
        unchanged = planted.path.read_bytes() == planted.data
    except OSError:
        unchanged = False
    if unchanged and not planted.extra:
        planted.path.unlink()
    for path in planted.extra:
        shutil.rmtree(path, ignore_errors=True)
    return unchanged
