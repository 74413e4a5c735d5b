"""The memory playbook (`memory.yml`) on a simulated host: the managed TTM limit file.

Vars: `magicstick_dynamic_limit_mi`, `magicstick_running_kernel`, `magicstick_mem_total_mi`.
It refuses (a failed assert, exit 2, nothing written) when the limit is not a positive multiple
of 1024 MiB, when limit + 16384 MiB exceeds MemTotal (the host's actual one, and the one the
worker passed), or when the running kernel is not the one the worker saw. Otherwise it writes
`/etc/modprobe.d/90-magicstick-ttm.conf` and runs `update-initramfs -u -k <running kernel>`
(recorded as an `initramfs` effect), every time, also when the file was already right.
The limit takes effect at the next boot (`sim/boot.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.sim.ansible import PlayLog, require
from magicstick_host.sim.faults import MEMORY_PLAYBOOK_FAILS
from magicstick_host.sim.model import Host

if TYPE_CHECKING:
    from typing import Any

MANAGED_TTM_CONF = "etc/modprobe.d/90-magicstick-ttm.conf"
RESERVE_MI = 16384
PAGES_PER_MI = 256


def managed_ttm_conf(limit_mi: int) -> str:
    pages = limit_mi * PAGES_PER_MI
    return (
        f"# managed by magicstick-host: configure-gpu-memory, dynamic GPU limit {limit_mi} MiB;"
        " do not edit\n"
        f"options ttm pages_limit={pages} page_pool_size={pages}\n"
    )


def initramfs_argv(release: str) -> list[str]:
    return ["update-initramfs", "-u", "-k", release]


def run_memory(host: Host, variables: dict[str, Any]) -> tuple[PlayLog, list[str], str | None]:
    """Change `host` as the playbook would. Returns the log, the faults that fired and the
    kernel whose initramfs was rebuilt (None: not run)."""
    log = PlayLog("Configure the Strix Halo shared GPU memory")
    limit: int = require(variables, "magicstick_dynamic_limit_mi", int)
    running: str = require(variables, "magicstick_running_kernel", str)
    mem_total_var: int = require(variables, "magicstick_mem_total_mi", int)
    log.task("Gathering Facts", "ok")
    if MEMORY_PLAYBOOK_FAILS in host.faults:
        host.faults.remove(MEMORY_PLAYBOOK_FAILS)
        log.task("Check the request against this host", "failed",
                 {"msg": "simulated failure (memory-playbook-fails)"})
        return log, [MEMORY_PLAYBOOK_FAILS], None
    mem_total = host.mem_total_kib() // 1024
    problems = []
    if limit < 1024 or limit % 1024:
        problems.append(f"the dynamic limit {limit} MiB is not a positive multiple of 1024")
    for seen, what in ((mem_total, "MemTotal"), (mem_total_var, "the MemTotal the worker saw")):
        if limit + RESERVE_MI > seen:
            problems.append(f"the dynamic limit {limit} MiB + {RESERVE_MI} MiB exceeds {what} "
                            f"({seen} MiB)")
    if running != host.kernel.release:
        problems.append(f"the running kernel is {host.kernel.release}, not {running}")
    if problems:
        log.task("Check the request against this host", "failed",
                 {"assertion": problems[0], "evaluated_to": False, "msg": "; ".join(problems)})
        return log, [], None
    log.task("Check the request against this host", "ok",
             {"changed": False, "msg": "All assertions passed"})
    text = managed_ttm_conf(limit)
    same = host.modprobe_files.get(MANAGED_TTM_CONF) == text
    host.modprobe_files[MANAGED_TTM_CONF] = text
    log.task("Write the managed TTM limit", "ok" if same else "changed",
             None if same else {"changed": True, "dest": f"/{MANAGED_TTM_CONF}"})
    log.task("Rebuild the initramfs of the running kernel", "changed", {
        "changed": True, "cmd": initramfs_argv(running), "rc": 0,
        "stdout": f"update-initramfs: Generating /boot/initrd.img-{running}"})
    return log, [], running
