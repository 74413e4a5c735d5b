"""The composition root: the only place that builds real adapters."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from magicstick_host.collect import collect_evidence
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.inspection import build_inspection
from magicstick_host.domain.limits import DEFAULT_LIMITS, Limits
from magicstick_host.domain.profiles import Profile
from magicstick_host.ports.clock import Clock, RealClock
from magicstick_host.ports.hostfs import RootedHostFS
from magicstick_host.ports.runner import NOT_FOUND, CommandResult, CommandRunner, RealRunner
from magicstick_host.profile_store import default_profiles_dir, load_profiles

SIM_MARKER = ".magicstick-sim/host.json"


class NoCommandsRunner:
    """For a root that is neither this machine nor a simulated host: commands can't observe it."""

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        stdout_path: str | None = None,
    ) -> CommandResult:
        return CommandResult(tuple(argv), NOT_FOUND, "", "no commands run against a non-live root")


def is_sim_root(root: str) -> bool:
    return os.path.isfile(os.path.join(root, SIM_MARKER))


def query_runner(root: str) -> CommandRunner:
    """The runner for read-only queries (systemctl is-active) about the host under `root`."""
    if os.path.realpath(root) == "/":
        return RealRunner()
    if is_sim_root(root):
        from magicstick_host.sim.runner import SimRunner

        return SimRunner(Path(root))
    return NoCommandsRunner()


def profiles_from(profiles_dir: str | None) -> tuple[Profile, ...]:
    return load_profiles(Path(profiles_dir) if profiles_dir else default_profiles_dir())


def profile_package_names(profiles: Sequence[Profile]) -> list[str]:
    return sorted({name for profile in profiles for name in profile.packages})


def gather(root: str, profiles: Sequence[Profile], runner: CommandRunner | None = None) -> Evidence:
    return collect_evidence(
        RootedHostFS(root), runner or query_runner(root), profile_package_names(profiles)
    )


def inspect_host(
    root: str,
    profiles_dir: str | None,
    *,
    clock: Clock | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> dict[str, Any]:
    profiles = profiles_from(profiles_dir)
    ev = gather(root, profiles)
    now = (clock or RealClock()).now()
    return build_inspection(ev, profiles, limits, observed_at=now.wall, root=root)
