"""playbooks/memory.yml, run for real by ansible-playbook against temporary host roots.

Each root has proc/meminfo, proc/sys/kernel/osrelease and etc/modprobe.d/; the initramfs command
is overridden with `touch <root>/initramfs-updated` (or `false`, to make it fail), so nothing
outside the temporary root is touched. The refusal and rollback cases share ONE run: one
inventory host per case (`-c local`), each with its own variables and root.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.playbooks.conftest import (
    assert_succeeded,
    changed_tasks,
    output,
    recap,
    run_playbook,
)
from tests.playbooks.test_prepare import HostResult, per_host, run_cases

pytestmark = [
    pytest.mark.real_commands,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="writes a root-owned file: run as root"),
]

KERNEL = "7.0.0-31-generic"
MEM_TOTAL_KB = 131023872  # 127953 MiB: 128 GB of RAM minus a 512 MB carve-out
MEM_TOTAL_MI = MEM_TOTAL_KB // 1024
TTM_FILE = "etc/modprobe.d/90-magicstick-ttm.conf"
MARKER = "initramfs-updated"
OTHER_CONF = "options snd-hda-intel model=auto\n"


def ttm_file_text(limit_mi: int) -> str:
    pages = limit_mi * 256
    return (
        f"# managed by magicstick-host: GPU dynamic memory limit {limit_mi} MiB; do not edit\n"
        f"options ttm pages_limit={pages} page_pool_size={pages}\n"
    )


def make_root(root: Path, kernel: str = KERNEL, mem_total_kb: int = MEM_TOTAL_KB) -> Path:
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/meminfo").write_text(
        f"MemTotal:       {mem_total_kb} kB\nMemFree:        100663296 kB\n"
        "MemAvailable:   120000000 kB\n"
    )
    (root / "proc/sys/kernel/osrelease").write_text(f"{kernel}\n")
    (root / "etc/modprobe.d").mkdir(parents=True)
    (root / "etc/modprobe.d/alsa-base.conf").write_text(OTHER_CONF)
    return root


def memory_vars(root: Path, limit_mi: int, **overrides: Any) -> dict[str, Any]:
    return {
        "magicstick_dynamic_limit_mi": limit_mi,
        "magicstick_running_kernel": KERNEL,
        "magicstick_mem_total_mi": MEM_TOTAL_MI,
        "magicstick_root": str(root),
        "magicstick_initramfs_command": f"touch {root}/{MARKER}",
        **overrides,
    }


def files(root: Path) -> dict[str, str]:
    """Every regular file under root (relative path -> content), proc/ excluded."""
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] != "proc"
    }


def test_syntax_check() -> None:
    proc = run_playbook("memory.yml", {}, extra_args=["--syntax-check"])
    assert proc.returncode == 0, output(proc)


# --- a limit set twice ----------------------------------------------------------------------------


@dataclass
class Applied:
    root: Path
    first: subprocess.CompletedProcess[str]
    after_first: dict[str, str]
    second: subprocess.CompletedProcess[str]
    after_second: dict[str, str]


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> Applied:
    root = make_root(tmp_path_factory.mktemp("memory") / "root")
    variables = memory_vars(root, 65536)
    first = run_playbook("memory.yml", variables)
    after_first = files(root)
    (root / MARKER).unlink(missing_ok=True)  # the second run must not create it again
    second = run_playbook("memory.yml", variables)
    return Applied(root, first, after_first, second, files(root))


def test_writes_the_managed_file_and_rebuilds_the_initramfs(applied: Applied) -> None:
    counts = assert_succeeded(applied.first)
    assert changed_tasks(applied.first) == [
        "memory : Write the GPU dynamic memory limit to /etc/modprobe.d/90-magicstick-ttm.conf",
        "memory : Rebuild the initramfs of the running kernel",
    ], output(applied.first)
    assert counts["changed"] == 2
    # exactly these changes: the managed file and the initramfs (the marker), nothing else
    assert applied.after_first == {
        "etc/modprobe.d/90-magicstick-ttm.conf": ttm_file_text(65536),
        "etc/modprobe.d/alsa-base.conf": OTHER_CONF,
        MARKER: "",
    }
    assert ttm_file_text(65536).splitlines()[1] == (
        "options ttm pages_limit=16777216 page_pool_size=16777216"
    )
    st = (applied.root / TTM_FILE).stat()
    assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o644, 0, 0)


def test_second_run_changes_nothing(applied: Applied) -> None:
    counts = assert_succeeded(applied.second)
    assert counts["changed"] == 0, changed_tasks(applied.second)
    assert not (applied.root / MARKER).exists(), "the initramfs was rebuilt again"
    assert applied.after_second == {k: v for k, v in applied.after_first.items() if k != MARKER}


def test_check_mode_writes_nothing(tmp_path: Path) -> None:
    root = make_root(tmp_path / "root")
    proc = run_playbook("memory.yml", memory_vars(root, 65536), check=True)
    assert recap(proc)["changed"] == 1 and recap(proc)["failed"] == 0, output(proc)
    assert files(root) == {"etc/modprobe.d/alsa-base.conf": OTHER_CONF}


# --- refusals and rollback: one run, one host per case --------------------------------------------

OLD_LIMIT = 32768
HEADROOM_TASK = "Refuse a limit that leaves less than 16 GiB to Linux"
KERNEL_TASK = "Refuse when the running kernel is not the one the limit was authorised on"
FAIL_TASK = "Fail, the GPU memory limit was not set"


@dataclass(frozen=True)
class Case:
    limit: int
    overrides: dict[str, Any]
    # the failed task and the fragments of its message, in order (None: succeeds); ansible's
    # own words between them (its command module's "non-zero return code", reworded in 2.22)
    expected: tuple[str, str | tuple[str, ...]] | None
    kernel: str = KERNEL
    previous_limit: int | None = None  # a managed file from an earlier run


CASES: dict[str, Case] = {
    # 114688 + 16384 = 131072 > 127953
    "too-little-left": Case(
        114688,
        {},
        (
            HEADROOM_TASK,
            "a dynamic limit of 114688 MiB leaves less than 16384 MiB (16 GiB) to Linux: "
            "MemTotal is 127953 MiB now (/proc/meminfo) and was 127953 MiB when authorised; "
            "the limit may be at most 111569 MiB",
        ),
    ),
    # the largest limit that fits (110592 + 16384 = 126976 <= 127953) ...
    "largest-that-fits": Case(110592, {}, None),
    # ... unless the authorised MemTotal was higher than what the host shows now
    "authorised-more-than-now": Case(
        114688,
        {"magicstick_mem_total_mi": 200000},
        (HEADROOM_TASK, "MemTotal is 127953 MiB now (/proc/meminfo) and was 200000 MiB"),
    ),
    # ... or lower
    "authorised-less-than-now": Case(
        110592,
        {"magicstick_mem_total_mi": 120000},
        (HEADROOM_TASK, "the limit may be at most 103616 MiB"),
    ),
    "wrong-running-kernel": Case(
        65536,
        {},
        (
            KERNEL_TASK,
            "the running kernel is 6.8.0-51-generic, not 7.0.0-31-generic",
        ),
        kernel="6.8.0-51-generic",
    ),
    "not-a-multiple-of-1024": Case(
        65000,
        {},
        ("Refuse a limit that is not a positive multiple of 1024 MiB", "65000 MiB"),
    ),
    "zero": Case(0, {}, ("Refuse a limit that is not a positive multiple of 1024 MiB", "0 MiB")),
    "not-an-integer": Case(
        65536,
        {"magicstick_dynamic_limit_mi": "65536"},
        ("Check the worker's variables", "must be integers"),
    ),
    # the initramfs command fails: the file goes back to what it was
    "initramfs-fails-over-an-old-limit": Case(
        65536,
        {"magicstick_initramfs_command": "false"},
        (
            FAIL_TASK,
            ("Rebuild the initramfs of the running kernel failed: ",
             "(rc 1). /etc/modprobe.d/90-magicstick-ttm.conf was left as it was before this run"),
        ),
        previous_limit=OLD_LIMIT,
    ),
    "initramfs-fails-on-a-fresh-host": Case(
        65536,
        {"magicstick_initramfs_command": "false"},
        (FAIL_TASK, "Rebuild the initramfs of the running kernel failed"),
    ),
    # a new limit over an old one: rewritten, initramfs rebuilt
    "changes-an-old-limit": Case(65536, {}, None, previous_limit=OLD_LIMIT),
}


@pytest.fixture(scope="module")
def cases_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], dict[str, HostResult], dict[str, Path]]:
    base = tmp_path_factory.mktemp("memory-cases")
    roots: dict[str, Path] = {}
    hosts: dict[str, tuple[dict[str, Any], Path]] = {}
    for name, case in CASES.items():
        root = roots[name] = make_root(base / name, kernel=case.kernel)
        if case.previous_limit is not None:
            (root / TTM_FILE).write_text(ttm_file_text(case.previous_limit))
            (root / TTM_FILE).chmod(0o644)
        variables = memory_vars(root, case.limit, **case.overrides)
        variables.pop("magicstick_root")
        hosts[name] = (variables, root)
    proc = run_cases("memory.yml", base, hosts)
    return proc, per_host(proc), roots


@pytest.mark.parametrize("name", list(CASES))
def test_case(cases_run: Any, name: str) -> None:
    proc, results, roots = cases_run
    case = CASES[name]
    result = results[name]
    root = roots[name]
    previous = {TTM_FILE: ttm_file_text(case.previous_limit)} if case.previous_limit else {}
    unchanged = {"etc/modprobe.d/alsa-base.conf": OTHER_CONF, **previous}
    if case.expected is None:
        assert result.counts["failed"] == 0, (result, output(proc))
        assert files(root) == {
            "etc/modprobe.d/alsa-base.conf": OTHER_CONF,
            TTM_FILE: ttm_file_text(case.limit),
            MARKER: "",
        }
        return
    task, fragment = case.expected
    assert proc.returncode != 0
    assert result.counts["failed"] == 1, (result, output(proc))
    assert result.failed_task == task, (result, output(proc))
    assert result.message is not None, result
    fragments = (fragment,) if isinstance(fragment, str) else fragment
    assert re.search(".*".join(map(re.escape, fragments)), result.message), result.message
    # refused or rolled back: the host is as it was (and no initramfs marker)
    assert files(root) == unchanged
    if task != FAIL_TASK:
        assert result.counts["changed"] == 0
