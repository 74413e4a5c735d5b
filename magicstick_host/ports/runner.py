"""The command runner port: the one seam through which any external command runs.

Effects (shutdown, ansible-playbook) and the few read-only queries (systemctl is-active,
uname -m) go through it, so the host simulator can stand in for the real machine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from magicstick_host.lite_dataclasses import dataclass
from magicstick_host.static import Protocol

# conventional shell codes, so a missing tool or a timeout reads like it would in a shell
NOT_FOUND = 127
TIMED_OUT = 124


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class CommandRunner(Protocol):
    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        stdout_path: str | None = None,
    ) -> CommandResult:
        """Run argv without a shell. Never raises for a failing command: look at returncode.

        With `stdout_path`, stdout and stderr go (appended) to that file instead of memory,
        for long steps whose output is a per-operation log.
        """
        ...


class FdPassingRunner(Protocol):
    """A runner that can hand descriptors down to the command (host convergence passes the
    maintenance lock to ansible-playbook, so the lock lives exactly as long as the run)."""

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        stdout_path: str | None = None,
        pass_fds: Sequence[int] = (),
    ) -> CommandResult: ...


class RealRunner:
    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        stdout_path: str | None = None,
        pass_fds: Sequence[int] = (),
    ) -> CommandResult:
        args = tuple(argv)
        if stdout_path is None and not pass_fds:
            captured = _spawned(args, timeout, env)
            if captured is not None:
                return captured
        import subprocess  # with threading and selectors: only for a process that runs one

        try:
            if stdout_path is not None:
                with open(stdout_path, "ab") as log:
                    logged = subprocess.run(
                        args,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        timeout=timeout,
                        env=dict(env) if env is not None else None,
                        check=False,
                        pass_fds=tuple(pass_fds),
                    )
                return CommandResult(args, logged.returncode, "", "")
            proc = subprocess.run(
                args,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
                env=dict(env) if env is not None else None,
                check=False,
                pass_fds=tuple(pass_fds),
            )
            return CommandResult(args, proc.returncode, proc.stdout, proc.stderr)
        except FileNotFoundError as exc:
            return CommandResult(args, NOT_FOUND, "", str(exc))
        except subprocess.TimeoutExpired:
            return CommandResult(args, TIMED_OUT, "", f"timed out after {timeout:g} s")


def _spawned(args: tuple[str, ...], timeout: float,
             env: Mapping[str, str] | None) -> CommandResult | None:
    """A captured run without importing subprocess (ports/spawn.py); None where it cannot."""
    from magicstick_host.ports.spawn import SpawnTimeout, spawn_captured

    try:
        done = spawn_captured(args, timeout, env)
    except FileNotFoundError as exc:
        return CommandResult(args, NOT_FOUND, "", str(exc))
    except SpawnTimeout:
        return CommandResult(args, TIMED_OUT, "", f"timed out after {timeout:g} s")
    if done is None:
        return None
    returncode, stdout, stderr = done
    return CommandResult(args, returncode, stdout, stderr)
