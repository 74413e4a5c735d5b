"""The composition root: the only place that builds real adapters."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from magicstick_host.app_roots import NoCommandsRunner, SimQueryRunner
from magicstick_host.app_roots import is_sim_root as is_sim_root
from magicstick_host.app_roots import simulator as simulator
from magicstick_host.collect import collect_evidence
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.inspection import build_inspection
from magicstick_host.domain.limits import DEFAULT_LIMITS, Limits
from magicstick_host.domain.profiles import Profile
from magicstick_host.ports.clock import Clock, RealClock
from magicstick_host.ports.command_memo import CommandMemo, MemoFactory
from magicstick_host.ports.hostfs import RootedHostFS
from magicstick_host.ports.runner import CommandRunner, RealRunner
from magicstick_host.profile_store import default_profiles_dir, load_profiles

if TYPE_CHECKING:
    # pathlib only where a tick needs it: with urllib.parse it is ~6 ms of the console's inspect
    from pathlib import Path
    from typing import Any

    from magicstick_host.effects.effect_ports import Effect, EffectPorts
    from magicstick_host.model_cache_reads import ModelCacheReads
    from magicstick_host.ports.kube import KubePort
    from magicstick_host.ports.state_store import StateStore
    from magicstick_host.tick import CrashHook, TickDeps
    from magicstick_host.tick_result import TickResult

# a Node name; compiled (and cached by re) the first time a tick names its Node, not by inspect
_DNS1123 = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


def query_runner(root: str) -> CommandRunner:
    """The runner for read-only queries (systemctl is-active) about the host under `root`."""
    if os.path.realpath(root) == "/":
        return RealRunner()
    if is_sim_root(root):
        return SimQueryRunner(root)
    return NoCommandsRunner()


INSTALLED_PLAYBOOKS_DIR = "/usr/local/lib/magicstick/host-management/playbooks"


def default_playbooks_dir() -> Path:
    """$MAGICSTICK_HOST_PLAYBOOKS, else the checkout's playbooks/, else the installed ones
    (which sit next to the installed profiles that prepare.yml checks a plan against)."""
    from pathlib import Path

    override = os.environ.get("MAGICSTICK_HOST_PLAYBOOKS")
    if override:
        return Path(override)
    beside_package = Path(__file__).resolve().parent.parent / "playbooks"
    return beside_package if beside_package.is_dir() else Path(INSTALLED_PLAYBOOKS_DIR)


def profiles_from(profiles_dir: str | None,
                  memo: CommandMemo | None = None) -> tuple[Profile, ...]:
    return load_profiles(profiles_dir or default_profiles_dir(), memo)


def profile_package_names(profiles: Sequence[Profile]) -> list[str]:
    return sorted({name for profile in profiles for name in profile.package_map})


def gather(
    root: str,
    profiles: Sequence[Profile],
    runner: CommandRunner | None = None,
    memo_for: MemoFactory | None = None,
    *,
    network: bool = True,
) -> Evidence:
    return collect_evidence(
        RootedHostFS(root),
        runner or query_runner(root),
        profile_package_names(profiles),
        memo_for,
        network=network,
    )


def gpu_health(root: str) -> Evidence:
    from magicstick_host.collect import collect_gpu_health

    return collect_gpu_health(RootedHostFS(root), query_runner(root))


def inspect_host(
    root: str,
    profiles_dir: str | None,
    *,
    clock: Clock | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> dict[str, Any]:
    from magicstick_host.ports.command_memo import console_memos

    # the timer's memos, read-only: a console inspect need not parse dpkg's status and the
    # profiles again when their bytes have not changed; the network is not in its report
    memo_for = console_memos(root)
    profiles = profiles_from(profiles_dir, memo_for("profiles.json"))
    ev = gather(root, profiles, memo_for=memo_for, network=False)
    now = (clock or RealClock()).now()
    return build_inspection(ev, profiles, limits, observed_at=now.wall, root=root)


# -- the tick -----------------------------------------------------------------------------


def kubeconfig_present(path: str) -> bool:
    # a directory (or another non-file) is there but unusable: bad input, not an agent node
    return os.path.exists(path)


NODE_NAME_ENV = "MAGICSTICK_HOST_NODE_NAME"
MAX_NODE_NAME = 253  # a DNS-1123 subdomain, as Kubernetes names Nodes (contract.md, nodeName)


def default_node_name() -> str:
    import socket

    from magicstick_host.errors import BadInputError

    name = socket.gethostname().split(".")[0].lower()
    if not re.match(_DNS1123, name):
        raise BadInputError(
            f"the short host name {name!r} is not a DNS-1123 name; pass --node-name"
        )
    return name


def node_name_of(option: str | None) -> str:
    """This host's Node name: --node-name (or its environment variable), else the short host
    name. An empty one is an error, never "use the host name": a unit or script that meant to
    set it and set nothing would otherwise act on whatever the host name happens to be."""
    from magicstick_host.errors import BadInputError

    if option is None and os.environ.get(NODE_NAME_ENV) == "":
        # click treats an empty environment variable as unset
        raise BadInputError(f"{NODE_NAME_ENV} is set but empty; set this host's Node name or "
                            "unset it to use the short host name")
    if option is None:
        return default_node_name()
    if not option:
        raise BadInputError("--node-name is empty; give this host's Node name")
    if len(option) > MAX_NODE_NAME:
        raise BadInputError(
            f"--node-name is {len(option)} characters long; a Node name has at most "
            f"{MAX_NODE_NAME}"
        )
    if not re.match(_DNS1123, option):
        raise BadInputError(f"--node-name {option[:64]!r} is not a DNS-1123 name")
    return option


def tick_deps(
    *,
    root: str,
    runner: CommandRunner,
    clock: Clock,
    kube: KubePort | None,
    state_dir: Path,
    profiles: tuple[Profile, ...],
    node_name: str,
    playbooks_dir: Path,
    limits: Limits = DEFAULT_LIMITS,
    store: StateStore | None = None,
    crash: CrashHook | None = None,
) -> TickDeps:
    """The tick's ports around the given seams: the state store, the maintenance lock and the
    host filesystem under `root` (tests pass a simulator, a fake clock and a test apiserver)."""
    from magicstick_host.ports.command_memo import runtime_memo
    from magicstick_host.ports.lock import MaintenanceLock
    from magicstick_host.ports.network_store import NetworkStore
    from magicstick_host.ports.state_store import FileStateStore
    from magicstick_host.tick import TickDeps, no_crash

    store = store or FileStateStore(state_dir)
    return TickDeps(
        root=root,
        # the timer's ticks remember `netplan get` by the files it reads, and the dpkg status
        # by its bytes (ports/command_memo.py); inspect reads these memos, never writes them
        gather=lambda: gather(root, profiles, runner, runtime_memo),
        runner=runner,
        clock=clock,
        kube=kube,
        store=store,
        lock=MaintenanceLock(state_dir / "maintenance.lock"),
        hostfs=RootedHostFS(root),
        profiles=profiles,
        node_name=node_name,
        playbooks_dir=playbooks_dir,
        effects=step_effects(),
        # the report views' stores, in the state directory the state store keeps
        network_store=NetworkStore(store.directory),
        model_cache=model_cache_reads(root, store.directory, limits),
        limits=limits,
        crash=crash or no_crash,
    )


def model_cache_reads(root: str, state_dir: Path, limits: Limits) -> ModelCacheReads:
    """The model caches' reads of a tick: the host tree under `root`, both caches (the
    inventory's, the blocking workloads') in the state directory."""
    import time

    from magicstick_host.collect.model_cache import ModelCacheInventory
    from magicstick_host.model_cache_reads import ModelCacheReads
    from magicstick_host.ports.hosttree import RootedHostTree
    from magicstick_host.ports.model_cache_store import (
        WORKLOADS_FILE,
        WORKLOADS_SCHEMA,
        ModelCacheStore,
    )

    tree = RootedHostTree(root)
    inventory = ModelCacheInventory(tree, RootedHostFS(root), ModelCacheStore(state_dir),
                                    limits=limits, monotonic=time.monotonic)
    workloads = ModelCacheStore(state_dir, file=WORKLOADS_FILE, schema=WORKLOADS_SCHEMA)
    return ModelCacheReads(inventory, tree, workloads)


# configure-network and scan-wifi (network.md): their steps record the trial's stage around
# their effects (network/step_effects.py), loaded when one of them runs (an idle tick runs none)
NETWORK_STEPS = (
    "read-network-request",
    "begin-network-trial",
    "write-network-config",
    "apply-network-config",
    "keep-network-config",
    "restore-network-config",
    "scan-wifi",
)


def _network_effect(step: str) -> Effect:
    def run(inputs: dict[str, Any], ports: EffectPorts, request_uid: str) -> tuple[bool, str]:
        from magicstick_host.network.step_effects import NETWORK_EFFECTS

        return NETWORK_EFFECTS[step](inputs, ports, request_uid)

    return run


def step_effects() -> Mapping[str, Effect]:
    """The effect of every step an operation runs: effects/ (EFFECTS, looked up when a step
    runs, so a test's added effect is seen) and the network trial's steps."""
    from collections import ChainMap

    from magicstick_host.effects import EFFECTS

    return ChainMap(EFFECTS, {step: _network_effect(step) for step in NETWORK_STEPS})


def executor_runner(root: str, executor: str) -> CommandRunner:
    """real: this machine's commands (only for --root /); sim: the simulator on a simulated root."""
    from magicstick_host.errors import BadInputError

    if executor == "real":
        if os.path.realpath(root) != "/":
            raise BadInputError("--executor real acts on this machine, so it needs --root /; "
                                "use --executor sim for a simulated host")
        return RealRunner()
    if not is_sim_root(root):
        raise BadInputError(f"--executor sim needs a simulated host root; {root} is not one")
    from pathlib import Path

    runner: CommandRunner = simulator().runner.SimRunner(Path(root))
    return runner


def executor_clock(root: str, executor: str) -> Clock:
    """real: this machine's clocks; sim: the simulated host's (its CLOCK_BOOTTIME may be ahead:
    sim/clock.py). Called after executor_runner, which checked the root."""
    if executor == "sim":
        clock: Clock = simulator().clock.SimClock(root)
        return clock
    return RealClock()


def build_tick_deps(
    *,
    root: str,
    profiles_dir: str | None,
    state_dir: str,
    kubeconfig: str,
    node_name: str | None,
    executor: str,
) -> TickDeps:
    from pathlib import Path

    from magicstick_host.ports.command_memo import runtime_memo
    from magicstick_host.ports.kube import RealKube

    name = node_name_of(node_name)
    runner = executor_runner(root, executor)
    return tick_deps(
        root=root,
        runner=runner,
        clock=executor_clock(root, executor),
        # one instance per tick: its budget bounds all of the tick's Kubernetes I/O
        kube=RealKube(
            kubeconfig,
            timeout=DEFAULT_LIMITS.kube_timeout_s,
            budget_s=DEFAULT_LIMITS.kube_tick_budget_s,
            kubeconfig_memo=runtime_memo("kubeconfig.json"),
        ),
        state_dir=Path(state_dir),
        profiles=profiles_from(profiles_dir, runtime_memo("profiles.json")),
        node_name=name,
        playbooks_dir=default_playbooks_dir(),
    )


def tick(deps: TickDeps) -> TickResult:
    """One tick; another holder of the maintenance lock makes it a quiet "busy"."""
    from magicstick_host.errors import LockBusyError
    from magicstick_host.tick import run_tick
    from magicstick_host.tick_result import TickResult

    try:
        return run_tick(deps)
    except LockBusyError as exc:  # it saw nothing: what it last logged still holds
        return TickResult(str(exc), (exc,), complete=False)
