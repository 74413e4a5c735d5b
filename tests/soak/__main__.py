"""`make soak TICKS=N SEED=S`: the fault soak on its own test apiserver.

    python -m tests.soak [--ticks N] [--seed S] [--hosts K] [--workdir DIR]

Starts the real test kube-apiserver, puts a fault proxy in front of it for every simulated host,
runs N ticks of the real CLI in total, checks the invariants after every tick, prints the counts
and exits 1 on any violation (0 otherwise). The work directory is kept for the evidence.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
from pathlib import Path

from tests.kubeserver import build
from tests.kubeserver.harness import KubeServer
from tests.soak.runner import soak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, default=10000, help="ticks in total (all hosts)")
    parser.add_argument("--seed", type=str, default="",
                        help="the seed of every fault choice (default: a new one, printed)")
    parser.add_argument("--hosts", type=int, default=3, help="simulated hosts, ticked in parallel")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--max-minutes", type=float, default=None,
                        help="start no tick after this long; the summary says how many ran")
    args = parser.parse_args(argv)
    seed = int(args.seed) if args.seed else secrets.randbelow(10**6)
    work = args.workdir or Path(tempfile.mkdtemp(prefix=f"magicstick-soak-{seed}-"))
    work = work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    build.ensure_binary()
    with KubeServer(work / "apiserver") as server:
        counts, text = soak(server, work, ticks=args.ticks, seed=seed, hosts=args.hosts,
                            stop_after_s=args.max_minutes * 60 if args.max_minutes else None)
    print(text, flush=True)
    (work / "summary.txt").write_text(text + "\n")
    return 1 if counts.violations else 0


if __name__ == "__main__":
    sys.exit(main())
