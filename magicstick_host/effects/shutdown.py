"""Schedule an orderly shutdown. Does exactly what the step says; decides nothing."""

from __future__ import annotations

from magicstick_host.ports.runner import CommandRunner


def schedule_shutdown(
    runner: CommandRunner, mode: str, delay_minutes: int, text: str
) -> tuple[bool, str]:
    flag = {"reboot": "-r", "poweroff": "-P"}[mode]
    result = runner.run(["shutdown", flag, f"+{delay_minutes}", text], timeout=30)
    if result.ok:
        return True, f"shutdown {flag} +{delay_minutes} scheduled"
    output = (result.stderr or result.stdout).strip().splitlines()
    return False, f"shutdown exited {result.returncode}: {output[-1] if output else 'no output'}"
