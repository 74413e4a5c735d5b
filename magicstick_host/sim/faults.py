"""Fault injection for the simulated host: named faults in `host.faults`, and sysfs write faults.

Named faults (strings in `Host.faults`, i.e. `.magicstick-sim/host.json`):
- `shutdown` (persistent): every `shutdown` command fails (exit 1) until the entry is removed.
- `apt-fails` (one-shot): the prepare playbook fails at "Install the approved kernel packages"
  with a dpkg error, exit 2, nothing installed.
- `package-unavailable` (one-shot): the pinned kernel meta version is no longer in the archive
  (`E: Version '...' for '...' was not found`), exit 2, nothing installed.
- `apt-crash-halfway` (one-shot): the prepare playbook installs the kernel image, its modules and
  the /boot files, leaves the meta package(s) `install ok half-configured` at their old version,
  and then the process running it dies: `SimulatedCrash` is raised out of `SimRunner.run`.
- `memory-playbook-fails` (one-shot): the memory playbook fails before writing anything, exit 2.
- `gpu-publish-fails` (one-shot): the GPU evidence publisher exits 1.
- `tool-flood`, `tool-hang-grandchild`, `tool-sigsegv`, `tool-exit-holding-stdout` (one-shot,
  `TOOL_FAULTS`): the next read-only query the simulator answers (`READ_ONLY_QUERIES`:
  `systemctl is-active`, `uname -m`, `ip ... show`, `iw dev X link`) is answered by a real
  hostile process run through the real command runner (ports/runner.py `RealRunner`), with the
  caller's timeout, so the runner's caps act inside a real tick: a `python -c` that writes to
  stdout forever; `sh -c 'sleep 3600 & exec sleep 3600'`, past any timeout, a grandchild
  included; a tool that prints half its answer and kills itself with SIGSEGV; one that prints
  the simulated answer, exits with its code and leaves `sleep 3600 &` holding stdout. Every such
  process has `HOSTILE_TOOL_ENV=<host root>` in its environment (inherited by its children), so
  a test can find any that outlives the tick in /proc.
- `carveout-write` (persistent; set by `break_carveout_write`, cleared by
  `repair_carveout_write`, both in sim/carveout_fault.py): the worker's write to
  `uma/carveout` fails; see there.

A one-shot fault is removed from host.json when it fires and the firing is appended to the
effects log as `{"effect": "fault", "fault": NAME, ...}`, so a retry of the same step succeeds
and a test can see both the fault and the retry. Put the name in twice to make it fire twice.
"""

from __future__ import annotations

from pathlib import Path

from magicstick_host.sim.model import Host

STRIX_ADDR = "0000:c5:00.0"

SHUTDOWN = "shutdown"
APT_FAILS = "apt-fails"
PACKAGE_UNAVAILABLE = "package-unavailable"
APT_CRASH_HALFWAY = "apt-crash-halfway"
MEMORY_PLAYBOOK_FAILS = "memory-playbook-fails"
GPU_PUBLISH_FAILS = "gpu-publish-fails"
CARVEOUT_WRITE = "carveout-write"
TOOL_FLOOD = "tool-flood"
TOOL_HANG_GRANDCHILD = "tool-hang-grandchild"
TOOL_SIGSEGV = "tool-sigsegv"
TOOL_EXIT_HOLDING_STDOUT = "tool-exit-holding-stdout"
TOOL_FAULTS = (TOOL_FLOOD, TOOL_HANG_GRANDCHILD, TOOL_SIGSEGV, TOOL_EXIT_HOLDING_STDOUT)
ONE_SHOT = (
    APT_FAILS,
    PACKAGE_UNAVAILABLE,
    APT_CRASH_HALFWAY,
    MEMORY_PLAYBOOK_FAILS,
    GPU_PUBLISH_FAILS,
    *TOOL_FAULTS,
)
# in the environment of every hostile tool process (and so of its children): the host's root
HOSTILE_TOOL_ENV = "MAGICSTICK_SIM_HOSTILE_TOOL"
_FLOOD = "import os\nchunk = b'x' * 65536\nwhile True:\n    os.write(1, chunk)\n"
_SIGSEGV = ("import os, resource, signal, sys\n"
            "resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
            "os.write(1, sys.argv[2][: len(sys.argv[2]) // 2].encode())\n"
            "os.kill(os.getpid(), signal.SIGSEGV)\n")


def read_only_query(args: tuple[str, ...]) -> bool:
    """A query a tick makes without changing the host (READ_ONLY_QUERIES in the docstring)."""
    if args[:2] == ("systemctl", "is-active") and len(args) == 3:
        return True
    if args == ("uname", "-m"):
        return True
    if args[:1] == ("ip",) and "show" in args:
        return True
    return args[:2] == ("iw", "dev") and args[-1:] == ("link",)


def pending_tool_fault(host: Host) -> str | None:
    return next((name for name in host.faults if name in TOOL_FAULTS), None)


def hostile_tool_argv(fault: str, marker: str, stdout: str, returncode: int) -> list[str]:
    """The real process that answers a query under the tool fault `fault`; `stdout` and
    `returncode`: the simulated answer (what a well-behaved tool would have said)."""
    import sys

    if fault == TOOL_FLOOD:
        return [sys.executable, "-I", "-S", "-c", _FLOOD, marker]
    if fault == TOOL_HANG_GRANDCHILD:
        return ["/bin/sh", "-c", "sleep 3600 & exec sleep 3600", marker]
    if fault == TOOL_SIGSEGV:
        return [sys.executable, "-I", "-S", "-c", _SIGSEGV, marker, stdout]
    if fault == TOOL_EXIT_HOLDING_STDOUT:
        return ["/bin/sh", "-c", 'printf %s "$1"; sleep 3600 & exit "$2"', marker, stdout,
                str(returncode)]
    raise ValueError(f"not a tool fault: {fault!r}")
PERSISTENT = (SHUTDOWN, CARVEOUT_WRITE)


class SimulatedCrash(BaseException):
    """The process running a simulated command died (e.g. killed half-way through apt).

    A BaseException, so no `except Exception` in the product can swallow it; tests catch it the
    way they would see a killed process, then run the next tick as the restarted worker would.
    """


def take_one_shot(host: Host, name: str) -> bool:
    """True if the one-shot fault `name` is set; it is removed from `host` (the caller writes
    the host and records the firing)."""
    if name not in host.faults:
        return False
    host.faults.remove(name)
    return True


def carveout_path(root: Path, address: str) -> Path:
    return Path(root) / "sys/devices/pci0000:00" / address / "uma/carveout"
