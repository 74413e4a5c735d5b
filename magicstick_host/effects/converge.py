"""Run the convergence playbook with the maintenance lock handed down. Decides nothing.

The lock's descriptor is passed to ansible-playbook (and named in MAGICSTICK_CONVERGE_LOCK_FD,
which the playbook requires): flock(2) belongs to the open file, so the lock stays held for as
long as the playbook runs, even if this process is killed half way; a tick can never start
under a running convergence.
"""

from __future__ import annotations

import os
from pathlib import Path

from magicstick_host.ports.runner import CommandResult, FdPassingRunner

LOCK_FD_ENV = "MAGICSTICK_CONVERGE_LOCK_FD"
PLAYBOOK = "converge.yml"


def run_convergence(
    runner: FdPassingRunner,
    *,
    playbooks_dir: Path,
    vars_path: Path,
    log_path: Path,
    lock_fd: int,
    timeout_s: float,
) -> CommandResult:
    argv = [
        "ansible-playbook",
        "-i",
        "localhost,",
        "-c",
        "local",
        str(playbooks_dir / PLAYBOOK),
        "-e",
        f"@{vars_path}",
    ]
    env = {
        **os.environ,
        LOCK_FD_ENV: str(lock_fd),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_FORCE_COLOR": "0",
    }
    return runner.run(
        argv, timeout=timeout_s, env=env, stdout_path=str(log_path), pass_fds=(lock_fd,)
    )
