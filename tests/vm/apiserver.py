"""The appliance VM rig's test apiserver, in the background: `make vm` starts it, `make vm-down`
stops it (tests/vm/rig.py).

    python -m tests.vm.apiserver DIR

Like `python -m tests.kubeserver.harness DIR` (the kubeconfigs of every user in DIR, then
DIR/ready holding the URL), and also:
- SIGUSR1 stops the apiserver and SIGUSR2 starts it again on the same port, with the same
  certificates, users and objects: "the apiserver is down" for the worker in the VM, as a K3s
  restart is (DIR/serving exists while it serves);
- SIGTERM or SIGINT stops everything; the server dies with this process in any case.
DIR/runner.json holds this process's pid and the server's URL.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import threading
from pathlib import Path

from tests.kubeserver import build
from tests.kubeserver.harness import ALL_USERS, KubeServer, StartupError


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: python -m tests.vm.apiserver DIR", file=sys.stderr)
        return 2
    out = Path(argv[0]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    for name in ("ready", "serving"):
        (out / name).unlink(missing_ok=True)
    wanted: list[str] = []
    wake = threading.Event()

    def ask(what: str) -> None:
        wanted.append(what)
        wake.set()

    signal.signal(signal.SIGTERM, lambda *_: ask("exit"))
    signal.signal(signal.SIGINT, lambda *_: ask("exit"))
    signal.signal(signal.SIGUSR1, lambda *_: ask("stop"))
    signal.signal(signal.SIGUSR2, lambda *_: ask("start"))
    server = KubeServer(out / "server")
    try:
        server.start()
    except (StartupError, build.GoMissingError, build.BuildError) as exc:
        server.stop()
        print(f"[vm-apiserver] start failed: {exc}", file=sys.stderr)
        return 1
    try:
        for user in ALL_USERS:
            shutil.copyfile(server.kubeconfig(user.key), out / f"{user.key}.kubeconfig")
            (out / f"{user.key}.kubeconfig").chmod(0o600)
        (out / "runner.json").write_text(json.dumps({"pid": os.getpid(), "url": server.url}))
        (out / "serving").touch()
        (out / "ready").write_text(server.url + "\n")
        print(f"[vm-apiserver] serving {server.url} (ready in {server.start_seconds:.1f} s)",
              file=sys.stderr, flush=True)
        while True:
            wake.wait(1.0)
            wake.clear()
            while wanted:
                what = wanted.pop(0)
                if what == "exit":
                    return 0
                if what == "stop" and server.serving:
                    (out / "serving").unlink(missing_ok=True)
                    server.stop()
                    print("[vm-apiserver] stopped (SIGUSR1)", file=sys.stderr, flush=True)
                elif what == "start" and not server.serving:
                    server.resume()
                    (out / "serving").touch()
                    print(f"[vm-apiserver] serving again (ready in {server.start_seconds:.1f} s)",
                          file=sys.stderr, flush=True)
            if not wanted and (out / "serving").exists() and not server.serving:
                print("[vm-apiserver] the server exited by itself", file=sys.stderr)
                print(server._with_logs(""), file=sys.stderr)
                return 1
    except StartupError as exc:
        print(f"[vm-apiserver] {exc}", file=sys.stderr)
        return 1
    finally:
        for name in ("ready", "serving"):
            (out / name).unlink(missing_ok=True)
        server.stop()
        print("[vm-apiserver] stopped", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
