"""`make bench`: wall and CPU time of inspect and of a tick, medians of repeated runs, each next
to the floor measured in the same run, sample by sample.

Performance is measured here, never asserted in timed tests. Each run is a fresh process, as
the systemd timer starts it, so import time counts. The floors: a bare Python start, and a
minimal Python that reads the kubeconfig and makes the idle tick's two HTTPS requests
(tests/bench_floor.py). Targets (issue "The idle tick at the floor"): idle tick CPU <= 0.15 s
and peak RSS <= 35 MiB, publishing tick <= 0.2 s, inspect --json <= 0.1 s.

`inspect` is measured twice: with no memo (the first inspect after a boot, or a simulated host
without a timer) and with the timer's memos in its runtime directory (an appliance's console,
where the timer has ticked: ports/command_memo.py console_memos).

What runs is the command as the install writes it: the install role's wrapper
(playbooks/roles/install/templates/magicstick-host.j2, `python3 -I`) over this checkout, under
the interpreter the install names (magicstick_python, /usr/bin/python3: the distribution's
build, as on the appliance). Not the development venv's console script: its interpreter may be
another build (here pyenv's, about a fifth slower) and its site hook imports the editable
install's finder, which no appliance runs. The floors run under the same interpreter, with the
same -I, so each ratio compares like with like. One row repeats the idle tick under the
development interpreter, next to its own floor. BENCH_PYTHON names another interpreter.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from magicstick_host.sim.writer import create_host, load_host
from tests.harness.command import write_command
from tests.kubeserver import build
from tests.kubeserver.fixtures import KubeCluster
from tests.kubeserver.harness import KubeServer

CHECKOUT = Path(__file__).resolve().parents[1]
INSTALL_ROLE = CHECKOUT / "playbooks" / "roles" / "install"
RUNS = int(os.environ.get("BENCH_RUNS", "15"))


Sample = tuple[float, float, int]


GNU_TIME = "/usr/bin/time"


def timed(argv: list[str], env: dict[str, str] | None = None) -> Sample:
    """(wall s, cpu s, peak RSS KiB) of one child process.

    The CPU time is the kernel's account of the child and what it waited for (wait4), to the
    microsecond. The peak RSS comes from GNU time when there is one: a child forked straight
    from this (large) process would report this process's RSS as its own peak."""
    with tempfile.NamedTemporaryFile("r") as out, tempfile.TemporaryFile("w+b") as err:
        use_time = os.access(GNU_TIME, os.X_OK)
        full = [GNU_TIME, "-f", "%M", "-o", out.name, *argv] if use_time else argv
        start = time.perf_counter()
        proc = subprocess.Popen(full, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 75, 76):
            err.seek(0)
            raise SystemExit(f"{argv[1]} exited {proc.returncode}: "
                             f"{err.read().decode(errors='replace')}")
        peak = int(out.read().split()[-1]) if use_time else usage.ru_maxrss
        return wall, usage.ru_utime + usage.ru_stime, peak


def cpu_median(samples: list[Sample]) -> float:
    return statistics.median(s[1] for s in samples)


def report(label: str, samples: list[Sample], floor: list[Sample] | None = None,
           target_s: float | None = None) -> None:
    """One row. `floor` is the floor sampled alongside this row, run for run (paired): the
    ratio compares the same minutes of this shared machine, whose speed drifts by a third
    within an hour."""
    walls = [s[0] for s in samples]
    cpu = cpu_median(samples)
    line = (f"{label:<48} wall median {statistics.median(walls) * 1000:7.0f} ms "
            f"(min {min(walls) * 1000:.0f}, max {max(walls) * 1000:.0f})   "
            f"cpu median {cpu * 1000:7.0f} ms")
    if floor is not None:
        line += (f" = {cpu / cpu_median(floor):4.2f}x floor "
                 f"({cpu_median(floor) * 1000:.0f} ms alongside)")
    if target_s is not None:
        line += f"   target <= {target_s * 1000:.0f} ms: {'met' if cpu <= target_s else 'MISSED'}"
    print(line + f"   n={len(samples)}")


def paired(floor: Callable[[], Sample], measured: Callable[[], Sample],
           runs: int = RUNS) -> tuple[list[Sample], list[Sample]]:
    """(floor samples, samples), taken in turn."""
    floors: list[Sample] = []
    samples: list[Sample] = []
    for _ in range(runs):
        floors.append(floor())
        samples.append(measured())
    return floors, samples


def peak_rss(label: str, samples: list[Sample], floor: list[Sample], target_mib: float) -> None:
    peak = max(s[2] for s in samples) / 1024
    base = max(s[2] for s in floor) / 1024
    verdict = "met" if peak <= target_mib else "MISSED"
    print(f"{label:<48} {peak:.1f} MiB = {peak / base:.1f}x floor ({base:.1f} MiB)   "
          f"target <= {target_mib:.0f} MiB: {verdict}")


RESOURCES = ("nodes", "hostoperations", "secrets", "pods", "modelactivations", "models")


def resource_of(path: str) -> str:
    """The resource a request path names ("nodes", "pods"...), for counting by kind."""
    parts = path.split("?")[0].split("/")
    return next((p for p in reversed(parts) if p in RESOURCES), path)


def api_requests_per_idle_hour(work: Path, cluster: KubeCluster) -> None:
    """Kubernetes requests of an idle hour: the real tick every 15.5 s on a fake clock."""
    from collections import Counter

    from tests.harness.world import World

    world = World(work / "idle-hour", cluster, "strix-halo-ubuntu-26.04-ready")
    calls: Counter[str] = Counter()

    def counting(method: str, path: str, *a: Any, real: Any = world.worker._request,
                 **kw: Any) -> Any:
        calls[f"{method} {resource_of(path)}"] += 1
        return real(method, path, *a, **kw)

    world.worker._request = counting  # type: ignore[method-assign]
    start = world.clock.now().wall
    ticks = 0
    while (world.clock.now().wall - start).total_seconds() < 3600:
        world.tick(advance_s=15.5)
        ticks += 1
    print(f"{'API requests per idle hour':<34} {sum(calls.values()):4d} in {ticks} ticks "
          f"({', '.join(f'{k}: {v}' for k, v in sorted(calls.items()))})")


def api_requests_per_operation(work: Path, cluster: KubeCluster) -> None:
    """Kubernetes requests the worker makes for one whole operation, and ticks it takes."""
    from collections import Counter

    from tests.harness.world import World

    cases = {
        "reboot": ("strix-halo-ubuntu-26.04-ready", lambda w: w.create_request("reboot")),
        "prepare-gpu": ("strix-halo-ubuntu-26.04-old-kernel", lambda w: w.create_request(
            "prepare-gpu", planId=w.published()["plan"]["id"], allowExperimental=True)),
        "configure-gpu-memory": ("strix-halo-ubuntu-26.04-ready", lambda w: w.create_request(
            "configure-gpu-memory", planId=w.published()["gpuMemory"]["id"],
            allowExperimental=True, gpuMemory={"carveoutIndex": 9, "dynamicLimitMi": 65536})),
    }
    for action, (scenario, make_request) in cases.items():
        cluster.request("DELETE", "/apis/appliance.magicstick.dev/v1alpha1/namespaces/"
                        "ai-system/moduleactivations/amd-gpu")
        world = World(work / f"ops-{action}", cluster, scenario)
        world.published()
        make_request(world)
        calls: Counter[str] = Counter()

        def counting(method: str, path: str, *a: Any, calls: Counter[str] = calls,
                     real: Any = world.worker._request, **kw: Any) -> Any:
            calls[method] += 1
            return real(method, path, *a, **kw)

        world.worker._request = counting  # type: ignore[method-assign]
        phase = world.drive()
        total = sum(calls.values())
        print(f"{'API requests: ' + action:<34} {total:4d} ({dict(sorted(calls.items()))}) "
              f"-> {phase}, {len(world.effects('shutdown'))} shutdown(s), "
              f"{len(world.playbooks())} playbook run(s)")


# -- the idle tick with a 100,000-file model cache (issue 12) --------------------------------
CACHE_FILES = 99_000  # with the scenario's own files, just under the walk's 100,000 inodes
WITHIN = 0.10


def development(work: Path, tick: list[str], env: dict[str, str], floor_args: list[str]) -> None:
    """The same idle tick under the development venv's interpreter, through the same wrapper,
    next to the GET floor under that interpreter."""
    compile_package(sys.executable)
    exe = write_command(sys.executable, work / "magicstick-host-development")
    floor, samples = paired(lambda: timed([sys.executable, "-I", *floor_args]),
                            lambda: timed([exe, *tick[1:]], env))
    # for comparison only: the target is the installed command's
    report(f"idle tick, development venv (Python {sys.version.split()[0]})", samples, floor)


def development_inspect(root: Path) -> None:
    """inspect as `make bench` measured it until 2 December, when issue 26 set its 3x: the
    development venv's console script, next to a bare start of the venv's Python, both with
    the venv's site hook (the editable install's finder). For comparison only: the rows above,
    the install's command under the install's interpreter, are the product's measure."""
    script = Path(sys.executable).with_name("magicstick-host")
    if not script.exists():
        print(f"inspect, development venv: no {script}, not measured")
        return
    floor, samples = paired(lambda: timed([sys.executable, "-c", "pass"]),
                            lambda: timed([str(script), "inspect", "--json", "--root",
                                           str(root)]))
    report("inspect, dev venv's script (until 2 Dec)", samples, floor)


def idle_with_model_cache(exe: str, work: Path, server: KubeServer,
                          cluster: KubeCluster) -> None:
    """The idle tick's CPU on a host whose cache holds ~100,000 files, next to the same tick on
    a host without caches, interleaved in one run: the inventory is cached (model-cache.md,
    "What users will measure"), so they should be within 10%."""
    from magicstick_host.sim.model_cache import add_many_files

    ticks: dict[str, list[str]] = {}
    envs: dict[str, dict[str, str]] = {}
    for label, scenario in (("without", "strix-halo-ubuntu-26.04-ready"),
                            ("with", "strix-halo-ubuntu-26.04-model-cache")):
        root = work / f"cache-{label}"
        create_host(scenario, root)
        if label == "with":
            add_many_files(root, CACHE_FILES)
        host = load_host(root)
        cluster.create_node(f"bench-{label}", boot_id=host.boot_id, kernel=host.kernel.release)
        ticks[label] = [exe, "tick", "--root", str(root), "--executor", "sim", "--state-dir",
                        str(work / f"state-{label}"), "--kubeconfig",
                        str(server.kubeconfig("worker-cert")), "--node-name", f"bench-{label}"]
        envs[label] = {**os.environ, "RUNTIME_DIRECTORY": str(runtime_dir(work / f"run-{label}"))}
        first = timed(ticks[label], envs[label])  # publishes; walks the caches once
        print(f"{'first tick, ' + label + ' a cache':<34} cpu {first[1] * 1000:7.0f} ms")
    samples: dict[str, list[Sample]] = {"without": [], "with": []}
    for _ in range(RUNS):
        for label in ("without", "with"):
            samples[label].append(timed(ticks[label], envs[label]))
    report("idle tick, no model cache", samples["without"])
    report(f"idle tick, {CACHE_FILES + 30:,}-file cache", samples["with"])
    ratio = cpu_median(samples["with"]) / cpu_median(samples["without"])
    verdict = "met" if ratio <= 1 + WITHIN else "MISSED"
    print(f"{'idle tick cpu, cache / no cache':<34} {ratio:.3f}   target <= {1 + WITHIN:.2f}: "
          f"{verdict}")
# ----------------------------------------------------------------------------------------


FLOOR = str(Path(__file__).resolve().parent / "bench_floor.py")
SWAP = str(Path(__file__).resolve().parent / "bench_swap.py")
# architecture.md, "Standard parts first": a part of our own only where it saves this much
KEEP_AT = 0.10


def savings(python: str, tick: list[str], env: dict[str, str]) -> None:
    """What each part of our own saves: the idle tick with the standard part swapped back
    (tests/bench_swap.py), next to the same tick through the same launcher with nothing
    swapped, run for run, as a share of ours. Under the install's interpreter when it has the
    standard part's package, else under the development venv's (said on the row)."""
    from tests.bench_swap import NEEDS, SWAPS

    print(f"what each part of our own saves (the idle tick with the standard part swapped "
          f"back; kept where >= {KEEP_AT:.0%}):")
    for part in SWAPS:
        if part == "none":
            continue
        runs_with = python
        if part in NEEDS and subprocess.run([python, "-I", "-c", f"import {NEEDS[part]}"],
                                            capture_output=True).returncode != 0:
            runs_with = sys.executable
        ours_argv = [runs_with, "-I", SWAP, str(CHECKOUT), "none", *tick[1:]]
        swapped = [runs_with, "-I", SWAP, str(CHECKOUT), part, *tick[1:]]
        ours, theirs = paired(lambda ours_argv=ours_argv: timed(ours_argv, env),
                              lambda swapped=swapped: timed(swapped, env))
        saving = cpu_median(theirs) / cpu_median(ours) - 1
        where = "" if runs_with == python else f" (under {runs_with}: {python} has no {part})"
        print(f"  {part:<12} swapped back {cpu_median(theirs) * 1000:5.0f} ms against ours "
              f"{cpu_median(ours) * 1000:4.0f} ms: saves {saving:+5.0%} of the idle tick   "
              f"{'kept' if saving >= KEEP_AT else 'BELOW THE BAR'}   n={len(ours)}{where}")


def runtime_dir(path: Path) -> Path:
    path.mkdir(mode=0o700)
    return path


def compile_package(python: str) -> None:
    """Byte-code for every module, for `python`, as the install writes it (playbooks/roles/
    install/files/compile_tree.py): the appliance never compiles at run time, and a development
    environment with PYTHONDONTWRITEBYTECODE would otherwise measure the compiler on every run."""
    subprocess.run([python, "-I", "-m", "compileall", "-q", str(CHECKOUT / "magicstick_host")],
                   check=True, stdout=subprocess.DEVNULL)


def install_python() -> str:
    """The interpreter the install runs the command with: the role's magicstick_python."""
    import yaml

    defaults = yaml.safe_load((INSTALL_ROLE / "defaults" / "main.yml").read_text())
    return str(defaults["magicstick_python"])


# what a tick or inspect imports beyond the standard library: PyYAML for a kubeconfig that has
# no memo yet (the first tick after a boot), as the floor does
NEEDS = "import sys, yaml; sys.exit(sys.version_info < (3, 11))"


def bench_python() -> tuple[str, str]:
    """(interpreter, why). The install's when it can run the measured commands, else this one."""
    chosen = os.environ.get("BENCH_PYTHON") or install_python()
    if not os.access(chosen, os.X_OK):
        return sys.executable, f"{chosen} is missing"
    probe = subprocess.run([chosen, "-I", "-c", NEEDS], capture_output=True)
    if probe.returncode != 0:
        return sys.executable, f"{chosen} is older than 3.11 or has no PyYAML"
    return chosen, "BENCH_PYTHON" if os.environ.get("BENCH_PYTHON") else "magicstick_python"


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="magicstick-bench-"))
    python, why = bench_python()
    version = subprocess.run([python, "-I", "-c", "import sys; print(sys.version.split()[0])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    compile_package(python)
    exe = write_command(python, work / "magicstick-host")
    print(f"interpreter: {python} (Python {version}; {why}); command: the install's wrapper "
          f"over {CHECKOUT}")
    root = work / "host"
    create_host("strix-halo-ubuntu-26.04-ready", root)

    def bare() -> Sample:
        return timed([python, "-I", "-c", "pass"])

    report("floor: bare Python start", [bare() for _ in range(RUNS)])
    inspect_sim = [exe, "inspect", "--json", "--root", str(root)]
    floor, samples = paired(bare, lambda: timed(inspect_sim))
    report("inspect --json (simulated host, no memo)", samples, floor, 0.1)
    floor, samples = paired(bare, lambda: timed([exe, "inspect", "--json"]))
    report("inspect --json (this machine, no memo)", samples, floor, 0.1)
    development_inspect(root)

    build.ensure_binary()
    with KubeServer(work / "apiserver") as server:
        cluster = KubeCluster(server)
        host = load_host(root)
        node = cluster.create_node("bench", boot_id=host.boot_id, kernel=host.kernel.release)
        from magicstick_host.ports.kube import hostoperation_name

        # both in the shape of K3s's admin kubeconfig: client certificate, key and CA inline
        floor_args = [FLOOR, str(server.kubeconfig("worker-cert")), "bench",
                      hostoperation_name(node["metadata"]["uid"])]

        def gets() -> Sample:
            return timed([python, "-I", *floor_args])

        requests_floor = [gets() for _ in range(RUNS)]
        report("floor: Python + the 2 HTTPS GETs", requests_floor)
        # the timer's environment: systemd's RuntimeDirectory= (units/magicstick-host-
        # management.service) holds the parse memos between ticks (ports/command_memo.py)
        unit_env = {**os.environ, "RUNTIME_DIRECTORY": str(runtime_dir(work / "run"))}
        tick = [exe, "tick", "--root", str(root), "--executor", "sim", "--state-dir",
                str(work / "state"), "--kubeconfig", str(server.kubeconfig("worker-cert")),
                "--node-name", "bench"]
        publishing: list[Sample] = []
        idle: list[Sample] = []
        publishing_floor: list[Sample] = []
        idle_floor: list[Sample] = []
        for _ in range(RUNS):
            # forget the last write, so this tick must publish (as after a content change)
            state = work / "state" / "state.json"
            if state.exists():
                doc = json.loads(state.read_text())
                doc["lastReportDigest"] = ""
                state.write_text(json.dumps(doc))
                os.chmod(state, 0o600)
            publishing_floor.append(gets())
            publishing.append(timed(tick, unit_env))
            idle_floor.append(gets())
            idle.append(timed(tick, unit_env))
        # the product's own shape: the real executor on this machine (no GPU) and its Node
        cluster.create_node(
            "bench-here", boot_id=Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
            kernel=os.uname().release,
        )
        real_tick = [exe, "tick", "--executor", "real", "--state-dir", str(work / "state-here"),
                     "--kubeconfig", str(server.kubeconfig("worker-cert")),
                     "--node-name", "bench-here"]
        real_env = {**os.environ, "RUNTIME_DIRECTORY": str(runtime_dir(work / "run-here"))}
        timed(real_tick, real_env)  # the first publishes the report
        real_floor, real_idle = paired(gets, lambda: timed(real_tick, real_env))
        # the console's inspect on an appliance: the timer's memos are there, read-only
        # (ports/command_memo.py console_memos); the "no memo" figures are the first after boot
        floor, samples = paired(bare, lambda: timed(inspect_sim, unit_env))
        report("inspect --json (simulated host, timer's memos)", samples, floor, 0.1)
        floor, samples = paired(bare, lambda: timed([exe, "inspect", "--json"], real_env))
        report("inspect --json (this machine, timer's memos)", samples, floor, 0.1)
        report("tick that publishes the report", publishing, publishing_floor, 0.2)
        report("idle tick (nothing to write)", idle, idle_floor, 0.15)
        report("idle tick, real executor, this machine", real_idle, real_floor, 0.15)
        peak_rss("idle tick peak RSS", idle, requests_floor, 35)
        savings(python, tick, unit_env)
        peak_rss("publishing tick peak RSS", publishing, requests_floor, 35)
        if python != sys.executable:
            development(work, tick, unit_env, floor_args)
        idle_with_model_cache(exe, work, server, cluster)
        api_requests_per_idle_hour(work, cluster)
        api_requests_per_operation(work, cluster)
    return 0


if __name__ == "__main__":
    sys.exit(main())
