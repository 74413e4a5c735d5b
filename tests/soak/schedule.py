"""What happens around one tick, drawn from the seed: API fault, kill, boots, requests.

`plan_tick(seed, host, n)` depends only on its arguments, so a violation's seed, host and tick
number name the faults that led to it. Most ticks pass through cleanly so operations progress;
the faults that cost a whole Kubernetes deadline (slow drip, blackhole) are the rarest.

The hostile inputs of issue #24 are drawn from a stream of their own (`.../hostile`), so the
faults above are the same for a seed as before they were added: a hostile answer (it replaces
that tick's API fault), a hostile KubeAI Model created for a few ticks, a tool fault (on a host
whose idle tick runs read-only queries) and a planted memo.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from magicstick_host.sim.faults import TOOL_FAULTS
from tests.soak.hostile import MEMO_KINDS, MODEL_KINDS
from tests.soak.proxy import HOSTILE_KINDS, ApiFault

# per tick; the rest of the probability is a clean pass-through
API_FAULT_RATES = {
    "reset": 0.04,
    "5xx": 0.05,
    "401": 0.015,
    "403": 0.015,
    "restart": 0.03,
    "slow-drip": 0.012,
    "blackhole": 0.012,
}
KILL_RATES = {  # the moments: tests/soak/kills.py
    "timed": 0.04,
    "on-save": 0.03,
    "on-intent": 0.03,
    "on-effect": 0.03,
}
POWER_LOSS_SHARE = 0.25  # of the kills: the host also boots at once (power lost mid-tick)
STRAY_BOOT_RATE = 0.015  # a boot the worker did not ask for, before a tick
KUBELET_LAG_RATE = 0.3  # of the boots: the Node shows the new boot only a tick later
HOST_FAULT_RATE = 0.02  # a one-shot simulator fault armed before a tick
HOST_FAULTS = ("apt-fails", "package-unavailable", "apt-crash-halfway",
               "memory-playbook-fails", "gpu-publish-fails")
# of the ticks where the host is idle: the machine is reinstalled (so an old kernel is prepared
# again and again over a long soak, and the Node comes back with a new UID)
REIMAGE_RATE = 0.004
ASK_RATE = 0.35  # the administrator asks for something when the host is free
# the cluster's other parts (a device plugin, the operator) answer a request waiting on them
RESPOND_RATE = 0.6
SHUTDOWN_DELAY_TICKS = (1, 2, 3)  # a scheduled shutdown happens this many ticks after it is seen
# issue #24, per tick (their own stream): rare enough that operations still progress
HOSTILE_ANSWER_RATE = 0.04  # of the kinds of HOSTILE_KINDS alike, instead of the API fault
HOSTILE_MODEL_RATE = 0.01  # a hostile Model is created before the tick...
HOSTILE_MODEL_TICKS = (1, 2, 3, 5)  # ...and deleted after this many of the host's ticks
TOOL_FAULT_RATE = 0.04  # a one-shot tool fault (sim/faults.py TOOL_FAULTS) armed
MEMO_RATE = 0.03  # a hostile kubeconfig memo planted for the tick


@dataclass(frozen=True)
class Kill:
    kind: str  # "timed" | "on-save" | "on-intent" | "on-effect"
    delay_s: float = 0.0  # timed: after this long
    nth: int = 1  # on-save: after this many saves of the tick
    power_loss: bool = False


@dataclass(frozen=True)
class TickPlan:
    api: ApiFault | None
    kill: Kill | None
    stray_boot: bool
    kubelet_lag: bool
    host_fault: str | None
    reimage: bool
    ask: bool
    cluster_responds: bool
    shutdown_delay_ticks: int
    rng_seed: int  # for the choices made during the tick (request specs)
    hostile_model: str | None = None  # MODEL_KINDS
    model_ticks: int = 0
    tool_fault: str | None = None  # TOOL_FAULTS
    memo: str | None = None  # MEMO_KINDS


def _pick(rng: random.Random, rates: dict[str, float]) -> str | None:
    draw = rng.random()
    for name, rate in rates.items():
        if draw < rate:
            return name
        draw -= rate
    return None


def _api_fault(rng: random.Random) -> ApiFault | None:
    kind = _pick(rng, API_FAULT_RATES)
    if kind is None:
        return None
    return ApiFault(
        kind=kind,
        after=rng.choice((0, 0, 1, 2, 3, 4, 6)),
        once=kind != "blackhole" and rng.random() < 0.3,
        code=rng.choice((500, 502, 503, 504)) if kind == "5xx" else 0,
        down_s=rng.uniform(1.0, 20.0) if kind == "restart" else 0.0,
    )


def plan_tick(seed: int, host: str, n: int, typical_tick_s: float = 1.2) -> TickPlan:
    rng = random.Random(f"{seed}/{host}/{n}")
    api = _api_fault(rng)
    kind = _pick(rng, KILL_RATES)
    kill = None
    if kind is not None:
        kill = Kill(kind, delay_s=rng.uniform(0.05, 1.3 * typical_tick_s),
                    nth=rng.choice((1, 1, 2, 3)), power_loss=rng.random() < POWER_LOSS_SHARE)
    hostile = random.Random(f"{seed}/{host}/{n}/hostile")
    if hostile.random() < HOSTILE_ANSWER_RATE:
        api = ApiFault(kind=hostile.choice(HOSTILE_KINDS),
                       after=hostile.choice((0, 0, 1, 2, 3, 4, 6)),
                       once=hostile.random() < 0.7)
    model = hostile.choice(MODEL_KINDS) if hostile.random() < HOSTILE_MODEL_RATE else None
    model_ticks = hostile.choice(HOSTILE_MODEL_TICKS)
    tool = hostile.choice(TOOL_FAULTS) if hostile.random() < TOOL_FAULT_RATE else None
    memo = hostile.choice(MEMO_KINDS) if hostile.random() < MEMO_RATE else None
    return TickPlan(
        api=api,
        kill=kill,
        stray_boot=rng.random() < STRAY_BOOT_RATE,
        kubelet_lag=rng.random() < KUBELET_LAG_RATE,
        host_fault=rng.choice(HOST_FAULTS) if rng.random() < HOST_FAULT_RATE else None,
        reimage=rng.random() < REIMAGE_RATE,
        ask=rng.random() < ASK_RATE,
        cluster_responds=rng.random() < RESPOND_RATE,
        shutdown_delay_ticks=rng.choice(SHUTDOWN_DELAY_TICKS),
        rng_seed=rng.getrandbits(32),
        hostile_model=model,
        model_ticks=model_ticks,
        tool_fault=tool,
        memo=memo,
    )
