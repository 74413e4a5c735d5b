"""`magicstick-host tick`: one bounded step of reconciliation. Read this file top to bottom.

lock → cloud-init gate → load state → collect → plan → supervise / intake / advance at most one
step → publish → exit. Every state change is saved (fsync) before anything that depends on it,
and every side effect runs between a saved intent and a saved outcome. What is particular to an
operation comes from its module, found in the registry (domain/operations/registry.py); the
ports come built from the composition root (app.py), the only module that imports this one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from magicstick_host.cluster_reads import read_cluster
from magicstick_host.domain import log_lines
from magicstick_host.domain.cluster import SYSTEM_NAMESPACE, ClusterView, hostoperation_name
from magicstick_host.domain.decisions import ClassifiedStep, RunStep, SetPhase, Situation, Wait
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.inspection import build_inspection, host_capabilities
from magicstick_host.domain.legacy_state import adopt_request
from magicstick_host.domain.limits import DEFAULT_LIMITS, Limits
from magicstick_host.domain.log_lines import LogLine, transition_line
from magicstick_host.domain.operations import lifecycle
from magicstick_host.domain.operations.registry import kind_of
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.profiles import Profile
from magicstick_host.domain.request import Accepted, HostFacts, Ignored, Rejected, rejection_status
from magicstick_host.domain.state import Block, Operation, ProcessedRequest, State
from magicstick_host.domain.supervision import supervise
from magicstick_host.domain.times import rfc3339
from magicstick_host.effects import EffectPorts, perform
from magicstick_host.errors import (
    EffectError,
    KubeConfigError,
    KubeError,
    MagicstickError,
    WaitingError,
)
from magicstick_host.lite_dataclasses import dataclass, replace
from magicstick_host.model_cache_reads import ModelCacheReads, observe_model_cache
from magicstick_host.network.view import network_capabilities
from magicstick_host.ports.clock import Clock, Instant
from magicstick_host.ports.hostfs import RootedHostFS
from magicstick_host.ports.kube import KubePort
from magicstick_host.ports.lock import Lock
from magicstick_host.ports.network_store import NetworkStore
from magicstick_host.ports.runner import CommandRunner
from magicstick_host.ports.state_store import StateStore
from magicstick_host.publish import Publishing, publish_all, publish_report
from magicstick_host.tick_result import TickResult

if TYPE_CHECKING:
    from typing import Any

    from magicstick_host.effects.effect_ports import Effect

# intake, decide and history are imported where they are used: an idle tick needs none of them
CrashHook = Callable[[str], None]


def no_crash(point: str) -> None:
    """Production crash hook: crash points only matter to the crash-point tests."""


@dataclass
class TickDeps:
    root: str
    gather: Callable[[], Evidence]
    runner: CommandRunner
    clock: Clock
    kube: KubePort | None
    store: StateStore
    # the maintenance lock (ports/lock.py), taken for the whole tick
    lock: Lock
    # the host root, for the effects that write under it (sysfs)
    hostfs: RootedHostFS
    profiles: tuple[Profile, ...]
    node_name: str
    playbooks_dir: Path
    # the effect of each step name (app.step_effects: effects/ and the network trial's steps)
    effects: Mapping[str, Effect]
    # the report views' stores in the state directory: the network trial's (network/view.py),
    # the model caches' inventory and workloads (model_cache_reads.py), built by app.py
    network_store: NetworkStore
    model_cache: ModelCacheReads
    limits: Limits = DEFAULT_LIMITS
    crash: CrashHook = no_crash


def run_tick(deps: TickDeps) -> TickResult:
    deps.store.prepare()  # the state directory (0700) also holds the lock
    with deps.lock:
        return Tick(deps).run()


class Tick:
    def __init__(self, deps: TickDeps) -> None:
        self.d = deps
        self.notes: list[str] = []
        self.problems: list[MagicstickError] = []
        # what this tick logs (domain/log_lines.py): its transitions, and what holds now
        self.events: list[LogLine] = []
        self.conditions: dict[str, LogLine] = {}
        self.inspection: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}

    def run(self) -> TickResult:
        ev = self.d.gather()
        if ev.services.cloud_init_present and ev.services.cloud_init_finished is not True:
            why = "waiting for cloud-init's base installation"
            waiting = log_lines.cloud_init_running(why)
            return TickResult(why, (WaitingError(why),), conditions=(waiting,), complete=False)
        state = self.d.store.load() or State()
        now = self.d.clock.now()
        cluster = self.read_cluster(state)
        self.capabilities = host_capabilities(ev, self.d.profiles, self.d.limits)
        self.capabilities.update(network_capabilities(self.d, state.operation, ev, cluster, now))
        self.inspection = build_inspection(ev, self.d.profiles, self.d.limits, observed_at=now.wall,
                                           root=self.d.root, capabilities=self.capabilities)
        self.capabilities.update(observe_model_cache(self.d, state, ev, now, cluster))
        state = self.supervise(state, ev, now, cluster)
        state = self.intake(state, ev, now, cluster)
        state = self.advance(state, ev, now, cluster)
        if self.d.kube is not None and not cluster.error:
            published = self.publishing(ev, now, cluster)
            state = publish_all(state, published)
            self.published(published)
        op = state.operation
        where = f"{op.action} {op.phase}" if op else "idle"
        return TickResult(
            "; ".join([where, *self.notes]),
            tuple(self.problems),
            events=tuple(self.events),
            conditions=tuple(self.conditions.values()),
        )

    def published(self, p: Publishing) -> None:
        self.notes += p.notes
        self.problems += p.errors + p.refusals
        if p.errors:  # a refusal is an event of its own (status-refused), not a condition
            self.conditions.setdefault("kubernetes", log_lines.kubernetes_unreachable(
                str(p.errors[0])))
        if p.report_waits:
            self.conditions["report"] = log_lines.report_waits(p.report_waits)

    def situation(self, ev: Evidence, now: Instant, cluster: ClusterView) -> Situation:
        return Situation(
            ev=ev,
            wall=now.wall,
            boottime=now.boottime,
            limits=self.d.limits,
            cluster=cluster,
            capabilities=self.capabilities,
        )

    def publishing(self, ev: Evidence, now: Instant, cluster: ClusterView) -> Publishing:
        assert self.d.kube is not None

        def save(state: State, event: str, journal: bool) -> State:
            return self.save(state, event, ev, now, journal=journal)

        return Publishing(
            kube=self.d.kube,
            node_name=self.d.node_name,
            limits=self.d.limits,
            cluster=cluster,
            ev=ev,
            now=now,
            inspection=self.inspection,
            capabilities=self.capabilities,
            save=save,
            crash=self.d.crash,
        )

    # -- persistence: every change is saved before anything depends on it ---------------------

    def save(
        self, state: State, event: str, ev: Evidence, now: Instant, *, journal: bool = True
    ) -> State:
        """Persist (fsync) a new state. A transition is committed together with its journal
        entry, which the store then appends (the next load does, if that append is lost)."""
        self.d.crash(f"before-save:{event}")
        from magicstick_host.domain.history import evidence_digest, is_transition, transition_entry

        if journal and is_transition(event):
            entry = transition_entry(
                event,
                state,
                at=rfc3339(now.wall),
                boot_id=ev.boot_id or "",
                evidence_digest=evidence_digest(ev),
            )
            state = self.d.store.commit(state, entry)
            self.events.append(transition_line(event, state))
        else:
            self.d.store.save(state)
        self.d.crash(f"after-save:{event}")
        return state

    # -- Kubernetes reads ---------------------------------------------------------------------

    def read_cluster(self, state: State) -> ClusterView:
        if self.d.kube is None:
            return ClusterView(error="no Kubernetes client")
        cluster, error = read_cluster(
            self.d.kube, self.d.node_name, state.operation, self.d.limits
        )
        if error is None:
            return cluster
        if cluster.node_missing:
            self.notes.append(f"kubernetes: the Node {self.d.node_name} is not in the cluster")
            line = log_lines.node_missing(self.d.node_name)
        else:
            self.notes.append(f"kubernetes: {error}")
            line = (
                log_lines.kubeconfig_unusable(str(error))
                if isinstance(error, KubeConfigError)
                else log_lines.kubernetes_unreachable(str(error))
            )
        self.conditions[line.key] = line
        # the local operation still advances; the exit code tells the operator
        self.problems.append(error)
        return cluster

    # -- 1. supervise the active operation's request ------------------------------------------

    def supervise(self, state: State, ev: Evidence, now: Instant, cluster: ClusterView) -> State:
        op = state.operation
        if op is not None and not op.name and cluster.ok:  # migrated: legacy_state.py
            op = adopt_request(op, cluster.request, hostoperation_name(cluster.node_uid))
            state = self.save(replace(state, operation=op), "adopted", ev, now, journal=False)
        if op is None or op.terminal or cluster.error:
            return state
        stop = supervise(
            op,
            cluster,
            node_name=self.d.node_name,
            shutdown_scheduled=ev.services.shutdown_scheduled is not None,
        )
        if stop is None:
            return state
        stopped = self.change(op, SetPhase(Phase.INTERRUPTED, stop.message), ev, now)
        if stop.blocks:
            block = Block(stop.event, stop.message, rfc3339(now.wall))
            return self.save(replace(state, operation=stopped, block=block), stop.event, ev, now)
        return self.save(self.record_end(state, stopped), stop.event, ev, now)

    # -- 2. intake of a new request -----------------------------------------------------------

    def intake(self, state: State, ev: Evidence, now: Instant, cluster: ClusterView) -> State:
        request = cluster.request
        if request is None or cluster.node is None:
            return state
        uid = str(request.get("metadata", {}).get("uid", ""))
        if state.operation is not None and state.operation.request_uid == uid:
            return state
        facts = HostFacts(
            node_name=self.d.node_name,
            node_uid=cluster.node_uid,
            boot_id=ev.boot_id,
            now=now.wall,
            shutdown_scheduled=ev.services.shutdown_scheduled is not None,
            capabilities=self.capabilities,
        )
        from magicstick_host.domain.intake import review_request

        review = review_request(request, state, facts, self.d.limits)
        if isinstance(review, Ignored):
            return state
        name = str(request["metadata"].get("name", ""))
        if isinstance(review, Rejected):
            status = rejection_status(review, at=rfc3339(now.wall), boot_id=ev.boot_id or "")
            entry = ProcessedRequest(
                review.uid, review.request_id, Phase.REJECTED, status, SYSTEM_NAMESPACE, name
            )
            self.notes.append(f"rejected {review.request_id}: {review.message}")
            return self.save(
                state.remember(entry, self.d.limits.processed_request_ids_kept), "rejected", ev, now
            )
        assert isinstance(review, Accepted) and ev.boot_id is not None
        kind = kind_of(review.action)
        assert kind is not None  # intake rejects an action the registry does not know
        op = lifecycle.start_operation(
            review,
            namespace=SYSTEM_NAMESPACE,
            name=name,
            boot_id=ev.boot_id,
            wall=now.wall,
            boottime=now.boottime,
            reboot_budget=kind.restart_budget,
            data=kind.start(review, self.situation(ev, now, cluster)),
        )
        entry = ProcessedRequest(review.uid, review.request_id, Phase.ACCEPTED)
        accepted = replace(
            state.remember(entry, self.d.limits.processed_request_ids_kept), operation=op
        )
        return self.save(accepted, "accepted", ev, now)

    # -- 3. advance the current operation by at most one step ---------------------------------

    def advance(self, state: State, ev: Evidence, now: Instant, cluster: ClusterView) -> State:
        op = state.operation
        if op is None or op.terminal or state.block is not None:
            return state
        kind = kind_of(op.action)
        assert kind is not None  # only a finished migrated operation can have another action
        from magicstick_host.domain.operations.decide import decide

        decision = decide(kind, op, self.situation(ev, now, cluster))
        if isinstance(decision, Wait):
            waited = lifecycle.touch_message(op, decision.message, wall=now.wall)
            if waited is op:
                return state
            return self.save(replace(state, operation=waited), "waiting", ev, now, journal=False)
        if isinstance(decision, ClassifiedStep):
            assert ev.boot_id is not None
            done = lifecycle.apply_classification(
                op, decision, boot_id=ev.boot_id, wall=now.wall, boottime=now.boottime
            )
            return self.save(self.record_end(state, done), "classified", ev, now)
        if isinstance(decision, SetPhase):
            changed = self.change(op, decision, ev, now)
            return self.save(self.record_end(state, changed), "phase", ev, now)
        if decision.step not in kind.steps:  # a defect: nothing has happened yet
            raise ValueError(f"{op.action} may not run the step {decision.step!r}")
        return self.run_step(state, op, decision, ev, now, cluster)

    def run_step(
        self,
        state: State,
        op: Operation,
        run: RunStep,
        ev: Evidence,
        now: Instant,
        cluster: ClusterView,
    ) -> State:
        assert ev.boot_id is not None
        over = lifecycle.over_budget(op, run)
        if over is not None:
            return self.save(
                self.record_end(state, self.change(op, over, ev, now)), "budget", ev, now
            )
        intent = lifecycle.begin_step(
            op, run, boot_id=ev.boot_id, wall=now.wall, boottime=now.boottime
        )
        state = self.save(replace(state, operation=intent), f"intent:{run.step}", ev, now)
        self.d.crash(f"before-effect:{run.step}")
        ok, detail = perform(self.d.effects, run.step, run.inputs,
                             self.effect_ports(state, ev, cluster), op.request_uid)
        self.d.crash(f"after-effect:{run.step}")
        after = self.d.clock.now()
        done = lifecycle.finish_step(intent, run, ok=ok, detail=detail, boot_id=ev.boot_id,
                                     wall=after.wall, boottime=after.boottime)
        # a step that refuses the request before any change on the host (the network request's
        # Secret) ends Rejected, as intake's refusals do: no failed effect to exit with
        if not ok and done.phase is not Phase.REJECTED:
            self.problems.append(EffectError(f"{op.action} {run.step}: {detail}"))
        return self.save(self.record_end(state, done), f"outcome:{run.step}", ev, after)

    def effect_ports(self, state: State, ev: Evidence, cluster: ClusterView) -> EffectPorts:
        store = self.d.store

        def heartbeat() -> None:
            # a long step must not let the report go stale; best effort, nothing saved
            if self.d.kube is None or cluster.error:
                return
            beat = self.publishing(ev, self.d.clock.now(), cluster)
            try:
                publish_report(state, beat, save=False)
            except KubeError as exc:
                self.notes.append(f"heartbeat report failed: {exc}")
            self.notes += beat.notes

        return EffectPorts(
            runner=self.d.runner,
            kube=self.d.kube,
            hostfs=self.d.hostfs,
            playbooks_dir=self.d.playbooks_dir,
            work_dir=store.directory,
            log_path=store.op_log_path,
            playbook_timeout_s=self.d.limits.playbook_timeout_s,
            heartbeat=heartbeat, clock=self.d.clock, crash=self.d.crash,
        )

    # -- helpers ------------------------------------------------------------------------------

    def change(self, op: Operation, change: SetPhase, ev: Evidence, now: Instant) -> Operation:
        return lifecycle.set_phase(
            op, change, boot_id=ev.boot_id or op.phase_boot_id, wall=now.wall, boottime=now.boottime
        )

    def record_end(self, state: State, op: Operation) -> State:
        """Put the operation back; once terminal, its phase is what the processed list keeps."""
        state = replace(state, operation=op)
        if op.terminal:
            entry = ProcessedRequest(op.request_uid, op.request_id, op.phase)
            state = state.remember(entry, self.d.limits.processed_request_ids_kept)
        return state
