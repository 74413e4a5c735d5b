"""Build the test apiserver (embedded etcd + kube-apiserver) from Go modules, once.

The binary is cached outside the repository, keyed by the sha256 of go.mod, go.sum, main.go and
the build flags, so a fresh clone on the same machine reuses it:

    ${MAGICSTICK_CACHE_DIR:-$HOME/.cache/magicstick-host}/kubeserver/<key>/kubeserver

A file lock beside the cache entry makes concurrent runs build once. The first build on two cores
takes several minutes and a few GB of Go caches; afterwards this takes a fraction of a second.

    python tests/kubeserver/build.py          # build if needed, print the binary's path
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
KUBE_VERSION = "v1.36.3"
KEY_FILES = ("go.mod", "go.sum", "main.go")
# The version the binary reports (kubectl version, /version): module builds carry none.
LDFLAGS = f"-s -w -X k8s.io/component-base/version.gitVersion={KUBE_VERSION}"
BUILD_ARGS = ("build", "-trimpath", "-buildvcs=false", "-mod=readonly", "-ldflags", LDFLAGS)

# Captured at import: the test suite's subprocess guard patches subprocess.Popen per test.
_POPEN = subprocess.Popen


class GoMissingError(RuntimeError):
    """No `go` toolchain on PATH: the real-apiserver tests cannot run."""


class BuildError(RuntimeError):
    pass


def log(msg: str) -> None:
    print(f"[kubeserver] {msg}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    base = os.environ.get("MAGICSTICK_CACHE_DIR") or str(Path.home() / ".cache" / "magicstick-host")
    return Path(base) / "kubeserver"


def cache_key(src: Path = HERE) -> str:
    h = hashlib.sha256()
    for name in KEY_FILES:
        h.update(name.encode() + b"\0" + (src / name).read_bytes() + b"\0")
    h.update("\0".join(BUILD_ARGS).encode())
    return h.hexdigest()


def binary_path(src: Path = HERE) -> Path:
    return cache_root() / cache_key(src) / "kubeserver"


def go_binary() -> str:
    go = shutil.which("go")
    if go is None:
        raise GoMissingError(
            "the Go toolchain (`go`) is not on PATH; the contract tests build a real "
            "kube-apiserver from Go modules (see tests/kubeserver/README.md)"
        )
    return go


def go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(GOTOOLCHAIN="local", CGO_ENABLED="0", GOFLAGS="-buildvcs=false")
    return env


def _run(argv: list[str], cwd: Path) -> None:
    proc = _POPEN(argv, cwd=cwd, env=go_env(), stdout=subprocess.PIPE,
                  stderr=subprocess.STDOUT, text=True)
    out, _ = proc.communicate()
    if proc.returncode != 0:
        tail = "\n".join(out.splitlines()[-40:])
        raise BuildError(f"{' '.join(argv)} failed with exit {proc.returncode}:\n{tail}")


PRUNE_AFTER_S = 14 * 24 * 3600


def _prune(root: Path, keep: Path) -> None:
    """Remove cached binaries of other sources that nobody used for two weeks."""
    now = time.time()
    for entry in root.iterdir():
        if entry.is_dir() and entry != keep and now - entry.stat().st_mtime > PRUNE_AFTER_S:
            log(f"removing an unused cached binary {entry}")
            shutil.rmtree(entry, ignore_errors=True)
            entry.with_suffix(".lock").unlink(missing_ok=True)


def ensure_binary(src: Path = HERE) -> Path:
    """Return the cached binary, building it first if needed (at most once across processes)."""
    target = binary_path(src)
    if target.is_file() and os.access(target, os.X_OK):
        os.utime(target.parent)  # "recently used", for pruning
        return target
    go = go_binary()
    target.parent.mkdir(parents=True, exist_ok=True)
    lock_path = target.parent.with_suffix(".lock")
    with open(lock_path, "w") as lock:
        if target.is_file():
            return target
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"another process is building; waiting for the lock {lock_path}")
            fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file():  # another process built it while we waited
            log("another process built it")
            return target
        log(f"building kube-apiserver {KUBE_VERSION} + etcd from Go modules into {target}")
        log("a cold build takes 5-25 minutes on 2 cores; later builds are cached")
        started = time.monotonic()
        tmp = target.with_name(f"kubeserver.tmp.{os.getpid()}")
        try:
            _run([go, *BUILD_ARGS, "-o", str(tmp), "."], src)
            tmp.chmod(0o755)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        log(f"built in {time.monotonic() - started:.1f} s")
    _prune(target.parent.parent, keep=target.parent)
    return target


def main() -> int:
    started = time.monotonic()
    try:
        path = ensure_binary()
    except (GoMissingError, BuildError) as exc:
        log(str(exc))
        return 1
    log(f"ready: {path} ({time.monotonic() - started:.1f} s)")
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
