"""Family 5: memos planted in $RUNTIME_DIRECTORY (ports/command_memo.py).

The timer's ticks remember the parsed kubeconfig (and the profiles, netplan and dpkg parses)
in the unit's runtime directory. A memo is trusted only from a root-owned directory no one else
can write, each file root-owned 0600, never through a symlink (architecture.md, "Hostile until
bounded"); the kubeconfig memo holds the credential, so it is never less protected than the
kubeconfig itself.

Per case: a clean tick with a proper runtime directory (root, 0700) writes the worker's own
memos; the host boots; the kubeconfig memo is edited so that its server is a recording listener
on another loopback port, and placed where it must not be trusted (the kind):
- `foreign-owner`: in the proper directory, but owned by nobody (65534) with mode 0666;
- `symlinked-dir`: $RUNTIME_DIRECTORY is a symlink to a 0777 directory holding it;
- `open-dir`: a world- or group-writable directory (0777, 01777 or 0775) holding it;
- `memo-symlink`: the proper directory, the memo a symlink to the edited file elsewhere.
Then the tick after the boot: not one byte may arrive at the listener; it talks to the real
server (through the proxy), exits 0 or 5 (never 70) within the bounds, completes the reboot;
and afterwards no file in a directory it must not trust holds the worker's token unless it is
exactly the planted one (the worker wrote no credential there), and in the proper directory
only a root-owned 0600 file does.
"""

from __future__ import annotations

import json
import os
import random
import stat
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile import cases
from tests.hostile.cases import Case
from tests.hostile.checks import Verdict
from tests.hostile.proxy import Recorder
from tests.hostile.rig import Rig

pytestmark = [pytest.mark.apiserver, pytest.mark.real_commands, pytest.mark.slow]

KINDS = ("foreign-owner", "symlinked-dir", "open-dir", "memo-symlink")
MEMO = "kubeconfig.json"
NOBODY = 65534


def edited_memo(rig: Rig, trusted: Path, decoy_port: int, verdict: Verdict) -> bytes:
    """The worker's own kubeconfig memo with the decoy's port for the proxy's; one in the
    memo format of ports/command_memo.py when the worker wrote none."""
    proxy_url = rig.proxy.url.encode()
    decoy_url = f"https://127.0.0.1:{decoy_port}".encode()
    written = trusted / MEMO
    if written.exists():
        raw = written.read_bytes()
        verdict.expect(proxy_url in raw, f"the worker's kubeconfig memo does not name the "
                       f"server {rig.proxy.url}: cannot edit it ({raw[:200]!r})")
        return raw.replace(proxy_url, decoy_url)
    verdict.note("the worker wrote no kubeconfig memo; a memo in ports/command_memo.py's format "
                 "is planted instead")
    from hashlib import sha256

    from magicstick_host.ports.kubeconfig import PARSE_VERSION

    kubeconfig = rig.kubeconfig.read_bytes()
    doc = json.loads(kubeconfig)
    doc["clusters"][0]["cluster"]["server"] = decoy_url.decode()
    return json.dumps({"version": 1, "key": f"{PARSE_VERSION}:{sha256(kubeconfig).hexdigest()}",
                       "at": time.time(), "output": json.dumps(doc)}).encode()


def plant(kind: str, rng: random.Random, work: Path, trusted: Path,
          memo: bytes) -> tuple[Path, Path, str]:
    """(the $RUNTIME_DIRECTORY to give the tick, the directory holding the planted memo, what).
    For `foreign-owner` that directory is the proper one (only the file is foreign)."""
    if kind == "foreign-owner":
        path = trusted / MEMO
        path.write_bytes(memo)
        os.chown(path, NOBODY, NOBODY)
        path.chmod(0o666)
        return trusted, trusted, "the memo owned by 65534, mode 0666"
    if kind == "memo-symlink":
        elsewhere = work / "elsewhere"
        elsewhere.mkdir(mode=0o700)
        (elsewhere / MEMO).write_bytes(memo)
        (elsewhere / MEMO).chmod(0o600)
        (trusted / MEMO).unlink(missing_ok=True)
        (trusted / MEMO).symlink_to(elsewhere / MEMO)
        return trusted, elsewhere, "the memo a symlink to a root 0600 file elsewhere"
    open_dir = work / "open"
    open_dir.mkdir()
    mode = 0o777 if kind == "symlinked-dir" else rng.choice([0o777, 0o1777, 0o775])
    open_dir.chmod(mode)
    for name in os.listdir(trusted):  # the worker's other memos, as they were
        if not (trusted / name).is_symlink() and (trusted / name).is_file():
            (open_dir / name).write_bytes((trusted / name).read_bytes())
            (open_dir / name).chmod(0o600)
    (open_dir / MEMO).write_bytes(memo)
    (open_dir / MEMO).chmod(0o600)
    if kind == "open-dir":
        return open_dir, open_dir, f"a directory of mode {mode:o} holding the memo"
    link = work / "runtime-link"
    link.symlink_to(open_dir, target_is_directory=True)
    return link, open_dir, f"$RUNTIME_DIRECTORY a symlink to a directory of mode {mode:o}"


def credential_leaks(directory: Path, token: bytes, planted: bytes, *,
                     proper: bool) -> list[str]:
    """Files in `directory` holding the token that the worker must not have written: in the
    proper runtime directory (root, 0700) a memo of its own is root 0600; anywhere else no
    file but the planted one, unchanged."""
    leaks = []
    for name in os.listdir(directory):
        path = directory / name
        try:
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode):
                continue
            data = path.read_bytes()
        except OSError:
            continue
        own = proper and info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o600
        if token in data and data != planted and not own:
            leaks.append(f"{path} (uid {info.st_uid}, mode {stat.S_IMODE(info.st_mode):o})")
    return leaks


@cases.parametrize("memos", KINDS, 2)
def test_planted_memos(case: Case, make_rig: Callable[..., Rig], tmp_path: Path) -> None:
    rng = case.rng()
    verdict = Verdict(case)
    rig = make_rig(verdict)
    trusted = tmp_path / "runtime"
    trusted.mkdir(mode=0o700)
    if not rig.schedule_reboot(env={"RUNTIME_DIRECTORY": str(trusted)}):
        verdict.done()
        return
    rig.boot()
    with Recorder() as decoy:
        memo = edited_memo(rig, trusted, decoy.port, verdict)
        runtime, untrusted, what = plant(case.kind, rng, tmp_path, trusted, memo)
        verdict.note(f"{what}; the edited memo names https://127.0.0.1:{decoy.port}")
        rig.tick("tick-2 (planted memo)", {0, 5}, env={"RUNTIME_DIRECTORY": str(runtime)})
        connections, received = decoy.snapshot()
        verdict.expect(connections == 0 and not received,
                       f"tick-2 used the planted memo: the decoy server got {connections} "
                       f"connection(s) and {len(received)} bytes")
        verdict.expect(bool(rig.proxy.requests_of("tick-2 (planted memo)")),
                       "tick-2 sent nothing to the real server (through the proxy)")
        rig.check_reboot_completed("tick-2 (planted memo)")
        leaks = credential_leaks(untrusted, rig.pki.token.encode(), memo,
                                 proper=untrusted == trusted)
        verdict.expect(not leaks, "the worker wrote its credential where it must not trust a "
                       f"memo: {leaks}")
    rig.check_no_duplicates()
    verdict.done()
