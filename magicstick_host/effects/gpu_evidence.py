"""Refresh the operator's GPU evidence: run the appliance's publisher, bounded in time."""

from __future__ import annotations

from magicstick_host.ports.runner import TIMED_OUT, CommandRunner


def refresh_gpu_evidence(runner: CommandRunner, path: str, timeout_s: float) -> tuple[bool, str]:
    result = runner.run([path], timeout=timeout_s)
    if result.ok:
        return True, f"{path} refreshed the GPU evidence"
    if result.returncode == TIMED_OUT:
        return False, f"{path} did not finish within {timeout_s:g} s"
    output = (result.stderr or result.stdout).strip().splitlines()
    return False, f"{path} exited {result.returncode}: {output[-1] if output else 'no output'}"
