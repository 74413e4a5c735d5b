"""The soak loop of one host: the world moves, the tick runs through the fault proxy, the
invariants are checked. `run_soak` runs one loop per host in parallel threads (a tick waiting
out a fault costs no CPU, so the hosts overlap their deadlines).

Between two ticks, as `plan_tick` says: a scheduled shutdown happens a few ticks after it was
seen; a stray boot (power loss, a watchdog) happens; the kubelet reports a boot now or a tick
later; the cluster's other parts answer a request waiting on them (the action's `respond`: for
prepare-gpu the device plugin and the operator register the GPU); a one-shot
simulator fault is armed; the administrator asks for an offered action as the dashboard does
(reading the report, replacing a finished request with a UID precondition).

Issue #24's hostile inputs, as `plan_tick` draws them (tests/soak/hostile.py): a hostile
answer is the tick's API fault; a hostile KubeAI Model is created in the soak's namespace for
hostile objects and deleted a few ticks later; a tool fault is armed on a host whose idle tick
runs read-only queries; a memo is planted for the tick and removed after it. After the tick:
the hostile tool processes still alive (none may be, unless the soak SIGKILLed the tick: then
they are killed, as systemd kills a unit's cgroup), what the decoy received, and whether a
due local step ran are part of the observation.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from magicstick_host.domain.phase import TERMINAL_PHASES
from magicstick_host.domain.state import State
from magicstick_host.domain.text import ELLIPSIS
from magicstick_host.sim.faults import TOOL_FAULTS
from tests.harness.world import report_node_eligibility
from tests.kubeserver.harness import NAMESPACE
from tests.soak.actions import BY_NAME, choose, report_fresh
from tests.soak.counts import Counts
from tests.soak.host import SoakHost
from tests.soak.hostile import (
    delete_model,
    kill_marked,
    leftovers,
    plant_memo,
    plant_model,
    unplant,
)
from tests.soak.invariants import HostLedger, Observation, Violation, check_tick, local_step_due
from tests.soak.observe import (
    cache_entries,
    cache_removals,
    carveout_selections,
    carveout_writes,
    read_journal,
    read_state,
)
from tests.soak.proxy import HOSTILE_KINDS
from tests.soak.schedule import TickPlan, plan_tick

Json = dict[str, Any]
REPORT_KEY = "appliance.magicstick.dev/host-management"
APPLIANCES = "/apis/appliance.magicstick.dev/v1alpha1"


class Operator:
    """The magicstick operator's part: marks a node's GPU eligible and registered in Appliance
    `local`, when the cluster serves Appliances (one object for every host: under a lock, and
    with the resourceVersion precondition of tests/harness/world.py)."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.lock = threading.Lock()
        code, body = cluster.request("GET", APPLIANCES)
        self.served = code == 200 and any(
            r.get("name") == "appliances" for r in (body or {}).get("resources") or [])

    def register(self, node_uid: str, boot_id: str) -> None:
        if not self.served:
            return
        entry = {"nodeUid": node_uid, "hostBootId": boot_id,
                 "hostFingerprint": hashlib.sha256(node_uid.encode()).hexdigest(),
                 "eligible": True, "hostDriverReady": True, "resourceRegistered": True}
        with self.lock:
            report_node_eligibility(self.cluster, entry)


@dataclass
class SoakSettings:
    seed: int
    bound_s: float  # a tick over this is a violation
    hard_limit_s: float  # and is killed here
    log: Any  # print-like, thread-safe
    models_namespace: str = ""  # where hostile Models are created ("": none are)


class HostDriver:
    def __init__(self, host: SoakHost, settings: SoakSettings, operator: Operator) -> None:
        self.host, self.s, self.operator = host, settings, operator
        self.ledger = HostLedger(host.key, settings.bound_s)
        self.counts = Counts()
        self.state: State | None = None
        self.shutdown_countdown: int | None = None
        self.typical_tick_s = 1.2
        self.models: list[tuple[str, int]] = []  # hostile Models: (name, last tick)
        self.decoy_seen = (0, 0)

    # -- the world between ticks --------------------------------------------------------------

    def _boot(self, why: str, plan: TickPlan) -> None:
        self.host.boot(kubelet_lag=plan.kubelet_lag)
        self.counts.boots[why] += 1
        self.shutdown_countdown = None
        if self.host.recovery_ran:
            self.counts.systemd_units["network-recovery"] += 1
        self._systemd_effects()

    def _systemd_effects(self) -> None:
        for effect in self.host.systemd_effects:
            self.counts.systemd_effects[f"{effect['unit']}: {effect.get('effect')}"] += 1
            self._tool_fired(effect)
        self.host.systemd_effects.clear()

    def _reimage(self) -> None:
        self.final_phases()  # of the requests of this installation
        self.host.reimage()
        self.counts.reimages += 1
        self.ledger = HostLedger(self.host.key, self.s.bound_s)
        self.state = None
        self.shutdown_countdown = None

    def _between(self, plan: TickPlan, rng: random.Random) -> None:
        op = self.state.operation if self.state else None
        if plan.reimage and (op is None or op.terminal) and self.shutdown_countdown is None:
            self._reimage()
        self.host.kubelet_catch_up()  # a lagging kubelet reports the boot one tick later
        if self.shutdown_countdown is not None:
            self.shutdown_countdown -= 1
            if self.shutdown_countdown <= 0:
                self._boot("requested", plan)
        if plan.stray_boot:
            self._boot("stray", plan)
        if self.host.fire_rollback_timer():
            self.counts.systemd_units["network-rollback"] += 1
            self._systemd_effects()
        op = self.state.operation if self.state else None
        action = BY_NAME.get(op.action) if op is not None else None
        if op is not None and not op.terminal and action is not None \
                and action.respond is not None and plan.cluster_responds:
            action.respond(self.host, self.operator, op)
        if plan.host_fault is not None and self.host.arm_host_fault(plan.host_fault):
            self.counts.host_faults[plan.host_fault] += 1
        if plan.ask:
            self._ask(rng)

    def _tool_fired(self, effect: Json) -> None:
        if effect.get("effect") == "fault" and effect.get("fault") in TOOL_FAULTS:
            self.counts.tools_fired[str(effect["fault"])] += 1

    def _hostile_models(self, plan: TickPlan, n: int, rng: random.Random) -> None:
        ns = self.s.models_namespace
        for name, last in [m for m in self.models if m[1] < n]:
            with contextlib.suppress(AssertionError, OSError):  # tried again at the end
                delete_model(self.host.cluster, ns, name)
            self.models.remove((name, last))
        if plan.hostile_model is not None and ns:
            name = f"hostile-{self.host.key}-{n}"
            refused = plant_model(self.host.cluster, ns, name, plan.hostile_model, rng)
            self.models.append((name, n + plan.model_ticks - 1))  # deleted even if refused
            if refused is None:
                self.counts.models[plan.hostile_model] += 1
            else:
                self.counts.models_refused += 1
                self.s.log(f"[soak] host {self.host.name}: Model {name} not stored: {refused}")
        if self.models:
            self.counts.model_ticks += 1

    def cleanup(self) -> None:
        for name, _ in self.models:
            delete_model(self.host.cluster, self.s.models_namespace, name)
        self.models.clear()

    def _ask(self, rng: random.Random) -> None:
        """The administrator, through the dashboard: only when no request is active."""
        cluster, host = self.host.cluster, self.host
        code, current = cluster.request("GET", cluster.hostoperations_path(host.request_name))
        current = current if code == 200 and isinstance(current, dict) else None
        if current is not None and (current.get("status") or {}).get("phase") \
                not in TERMINAL_PHASES:
            return  # an active (or still pending) request is never replaced
        node = cluster.read_node(host.name)
        raw = (node["metadata"].get("annotations") or {}).get(REPORT_KEY)
        report = json.loads(raw) if raw else None
        if report is None or not report_fresh(report, node):
            self.counts.reports_not_fresh += 1
            return
        picked = choose(report, rng)
        if picked is None:
            return
        action, fields = picked
        if current is not None:
            uid = current["metadata"]["uid"]
            cluster.delete_hostoperation(host.request_name, uid)
            self.ledger.forget_hostop(uid)
        request_id = f"{rng.getrandbits(128):032x}"
        spec = {
            "action": action.name, "nodeName": host.name, "nodeUid": report["nodeUid"],
            "bootId": report["bootId"], "requestId": request_id, "acknowledgeDisruption": True,
            "allowExperimental": False, "experimentMode": False,
            "actorHash": f"{rng.getrandbits(256):064x}", "planId": "", **fields,
        }
        if action.prepare is not None:
            action.prepare(cluster, NAMESPACE, spec)
        cluster.create_hostoperation(host.request_name, spec, namespace=NAMESPACE)
        self.ledger.asked[request_id] = action.name

    # -- one tick -----------------------------------------------------------------------------

    def tick(self, n: int) -> None:
        plan = plan_tick(self.s.seed, self.host.key, n, self.typical_tick_s)
        rng = random.Random(plan.rng_seed)
        self._between(plan, rng)
        host = self.host
        self._hostile_models(plan, n, random.Random(plan.rng_seed + 1))
        if plan.tool_fault is not None and host.runs_queries \
                and host.arm_host_fault(plan.tool_fault):
            self.counts.tools_armed[plan.tool_fault] += 1
        boot_id = host.boot_id
        awaiting = self.state.operation if self.state is not None else None
        awaiting = awaiting if local_step_due(awaiting, boot_id) else None
        planted = None
        if plan.memo is not None:
            planted = plant_memo(plan.memo, host.runtime, host.work / "planted", host.proxy.url,
                                 host.decoy.port)
            if planted is None:
                self.counts.memos_skipped += 1
            else:
                self.counts.memos[plan.memo] += 1
        carve_before, cache_before = carveout_selections(host.root), cache_entries(host.root)
        shutdown_before = host.shutdown_scheduled()
        host.proxy.arm(plan.api)
        run = host.run_tick(plan.kill, self.s.hard_limit_s,
                            runtime=planted.runtime if planted is not None else None)
        fired = host.proxy.disarm()
        if run.killed:  # as systemd kills what is left in the unit's cgroup
            self.counts.tools_after_kill += kill_marked(host.tool_marker)
            left: list[str] = []
        else:
            left = leftovers(host.tool_marker)
            kill_marked(host.tool_marker)  # reported below; not left to pile up
        decoy = host.decoy.snapshot()
        decoy_delta = (decoy[0] - self.decoy_seen[0], len(decoy[1]) - self.decoy_seen[1])
        self.decoy_seen = (decoy[0], len(decoy[1]))
        if planted is not None and unplant(planted):
            self.counts.memos_left += 1
        if awaiting is not None:
            self.counts.local_steps_due += 1
            if plan.api is not None and plan.api.kind in HOSTILE_KINDS and fired:
                self.counts.local_steps_due_hostile += 1
        self._count_tick(plan, run, fired)
        shutdown_after = host.shutdown_scheduled()
        effects = host.effects.new() + carveout_writes(
            carve_before, carveout_selections(host.root), host.boot_id) + cache_removals(
            cache_before, cache_entries(host.root), host.boot_id)
        self.state, state_error = read_state(host.state_dir)
        code, hostop = host.cluster.request(
            "GET", host.cluster.hostoperations_path(host.request_name))
        status_exit, status_doc, status_err = host.status()
        obs = Observation(
            tick=n, run=run, state=self.state, state_error=state_error,
            journal=read_journal(host.state_dir), effects=effects,
            shutdown_appeared=shutdown_after is not None and shutdown_after != shutdown_before,
            hostop=hostop if code == 200 and isinstance(hostop, dict) else None,
            status_exit=status_exit, status_doc=status_doc, status_stderr=status_err,
            leftover_processes=left, decoy_received=decoy_delta, awaiting_boot=awaiting,
            boot_id=boot_id,
        )
        for effect in effects:
            self._tool_fired(effect)
        message = ((obs.hostop or {}).get("status") or {}).get("message")
        if isinstance(message, str) and message.endswith(ELLIPSIS):
            self.counts.messages_clipped += 1
        for violation in check_tick(self.ledger, obs):
            self._violation(violation, plan)
        if shutdown_after is not None and self.shutdown_countdown is None:
            self.shutdown_countdown = plan.shutdown_delay_ticks
        if run.killed and plan.kill is not None and plan.kill.power_loss:
            self._boot("power-loss", plan)
        self._blocked(status_doc)

    def _count_tick(self, plan: TickPlan, run: Any, fired: int) -> None:
        c = self.counts
        c.ticks += 1
        c.tick_walls.append(run.wall_s)
        c.exit_codes[run.exit_code] += 1
        if run.peak_rss_bytes:
            c.peak_rss.append(run.peak_rss_bytes)
        if not run.killed:
            self.typical_tick_s = 0.9 * self.typical_tick_s + 0.1 * run.wall_s
        if run.over_bound:
            c.kills["hard-limit"] += 1
        elif run.killed and plan.kill is not None:
            c.kills[plan.kill.kind] += 1
        elif "SimulatedCrash" in run.stderr:
            c.kills["sim-crash-mid-playbook"] += 1
        if plan.api is not None and plan.api.kind in HOSTILE_KINDS:
            c.hostile_armed[plan.api.kind] += 1
            if fired:
                c.hostile_injected[plan.api.kind] += 1
        elif plan.api is not None:
            c.api_armed[plan.api.kind] += 1
            if fired:
                c.api_injected[plan.api.kind] += 1
                c.api_requests_hit[plan.api.kind] += fired

    def _violation(self, violation: Violation, plan: TickPlan) -> None:
        self.counts.violations.append(violation)
        self.s.log(f"{violation} [seed {self.s.seed}; plan {plan}]")

    def _blocked(self, status_doc: Json | None) -> None:
        """A documented block stops the worker until `recover`: the administrator runs it."""
        block = (status_doc or {}).get("block")
        if not isinstance(block, dict):
            return
        self.counts.blocks[str(block.get("code"))] += 1
        code, out = self.host.recover()
        self.counts.recoveries += 1
        self.s.log(f"[soak] host {self.host.name}: block {block.get('code')}: "
                   f"{str(block.get('message'))[:200]}; recover exit {code}: {out[-200:]}")
        self.state, _ = read_state(self.host.state_dir)

    # -- the end ------------------------------------------------------------------------------

    def final_phases(self) -> None:
        """Each request's phase as the local state (the truth) has it at the end (of the soak
        or of this installation of the machine)."""
        state = self.state or State()
        local = {p.request_id: p.phase for p in state.processed}
        if state.operation is not None:
            local[state.operation.request_id] = state.operation.phase
        for request_id, action in self.ledger.asked.items():
            phase = local.get(request_id, "not seen by the worker")
            if phase not in TERMINAL_PHASES and phase != "not seen by the worker":
                phase = f"active ({phase})"
            self.counts.requests.setdefault(action, Counter())[phase] += 1


def run_soak(hosts: list[SoakHost], ticks: int, settings: SoakSettings, operator: Operator,
             progress_every: int = 250, stop_after_s: float | None = None) -> Counts:
    """`ticks` in total over the hosts; with `stop_after_s`, no tick starts after that long (the
    ticks running then finish and are checked), so a soak cut short still reports truly."""
    drivers = [HostDriver(h, settings, operator) for h in hosts]
    shares = [ticks // len(hosts) + (1 if i < ticks % len(hosts) else 0)
              for i in range(len(hosts))]
    done = [0]
    lock = threading.Lock()
    errors: list[BaseException] = []
    started = time.monotonic()

    def loop(driver: HostDriver, share: int) -> None:
        try:
            for n in range(1, share + 1):
                if stop_after_s is not None and time.monotonic() - started >= stop_after_s:
                    return
                driver.tick(n)
                with lock:
                    done[0] += 1
                    total = done[0]
                if progress_every and total % progress_every == 0:
                    violations = sum(len(d.counts.violations) for d in drivers)
                    settings.log(f"[soak] {total}/{ticks} ticks, {violations} violations, "
                                 f"{time.monotonic() - started:.0f} s")
        except BaseException as exc:  # a soak defect: stop this host, report it
            errors.append(exc)
            settings.log(f"[soak] host {driver.host.name} stopped: {type(exc).__name__}: {exc}")
            raise

    threads = [threading.Thread(target=loop, args=(d, share), name=d.host.name, daemon=True)
               for d, share in zip(drivers, shares, strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = Counts()
    for d in drivers:
        d.final_phases()
        try:
            d.cleanup()
        except (AssertionError, OSError) as exc:
            settings.log(f"[soak] host {d.host.name}: removing its hostile Models: {exc}")
        total.merge(d.counts)
    if errors:
        total.violations.append(Violation("-", 0, "soak stopped", repr(errors[0])))
    return total
