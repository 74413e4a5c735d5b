"""`magicstick-host tick`: one bounded step of reconciliation. Read this file top to bottom.

lock → cloud-init gate → load state → collect → plan → supervise / intake / advance at most one
step → publish → exit. Every state change is saved (fsync) before anything that depends on it,
and every side effect runs between a saved intent and a saved outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from magicstick_host.domain import operation as ops
from magicstick_host.domain.canonical import sha256_hex
from magicstick_host.domain.decisions import ClassifiedStep, RunStep, SetPhase, Situation, Wait
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.gpu_memory import gpu_memory_capability
from magicstick_host.domain.history import is_transition, transition_entry
from magicstick_host.domain.inspection import build_inspection, rfc3339
from magicstick_host.domain.intake import (
    Accepted,
    HostFacts,
    Ignored,
    Rejected,
    request_digest,
    review_request,
)
from magicstick_host.domain.legacy_state import adopt_request
from magicstick_host.domain.limits import DEFAULT_LIMITS, Limits
from magicstick_host.domain.operations import OPERATIONS
from magicstick_host.domain.plan import clip_message
from magicstick_host.domain.prepare import APPLIANCE_NAME, MODULE_NAME, REGISTRATION_PHASES
from magicstick_host.domain.profiles import Profile
from magicstick_host.domain.state import Block, Operation, ProcessedRequest, State
from magicstick_host.effects import EffectPorts, perform
from magicstick_host.errors import ExitCode, KubeConfigError, KubeError
from magicstick_host.ports.clock import Clock, Instant
from magicstick_host.ports.hostfs import RootedHostFS
from magicstick_host.ports.kube import APPLIANCES, GROUP, VERSION, KubePort, hostoperation_name
from magicstick_host.ports.lock import MaintenanceLock
from magicstick_host.ports.runner import CommandRunner
from magicstick_host.ports.state_store import StateStore
from magicstick_host.publish import publish_all, publish_report

NAMESPACE = "ai-system"
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
    lock_path: Path
    profiles: tuple[Profile, ...]
    node_name: str
    playbooks_dir: Path = Path("/usr/local/lib/magicstick/host-management/playbooks")
    limits: Limits = DEFAULT_LIMITS
    crash: CrashHook = no_crash


@dataclass(frozen=True)
class TickResult:
    exit_code: ExitCode
    summary: str


@dataclass
class Cluster:
    """What Kubernetes showed this tick; `error` when it could not be asked."""

    node: dict[str, Any] | None = None
    request: dict[str, Any] | None = None
    module_activation: dict[str, Any] | None = None
    appliance: dict[str, Any] | None = None
    appliance_served: bool | None = None
    error: str = ""

    @property
    def node_uid(self) -> str:
        return str((self.node or {}).get("metadata", {}).get("uid", ""))


def run_tick(deps: TickDeps) -> TickResult:
    deps.store.prepare()  # the state directory (0700) also holds the lock
    with MaintenanceLock(deps.lock_path):
        return Tick(deps).run()


class Tick:
    def __init__(self, deps: TickDeps) -> None:
        self.d = deps
        self.notes: list[str] = []
        self.inspection: dict[str, Any] = {}
        self.exit_code = ExitCode.OK

    def run(self) -> TickResult:
        ev = self.d.gather()
        if ev.services.cloud_init_present and ev.services.cloud_init_finished is not True:
            return TickResult(ExitCode.WAITING, "waiting for cloud-init's base installation")
        state = self.d.store.load() or State()
        now = self.d.clock.now()
        self.inspection = build_inspection(
            ev, self.d.profiles, self.d.limits, observed_at=now.wall, root=self.d.root
        )
        cluster = self.read_cluster(state)
        state = self.supervise(state, ev, now, cluster)
        state = self.intake(state, ev, now, cluster)
        state = self.advance(state, ev, now, cluster)
        state = publish_all(self, state, ev, now, cluster)
        op = state.operation
        where = f"{op.action} {op.phase}" if op else "idle"
        return TickResult(self.exit_code, "; ".join([where, *self.notes]))

    def situation(self, ev: Evidence, now: Instant, cluster: Cluster) -> Situation:
        return Situation(
            ev=ev,
            wall=now.wall,
            boottime=now.boottime,
            limits=self.d.limits,
            node=cluster.node,
            module_activation=cluster.module_activation,
            appliance=cluster.appliance,
            appliance_served=cluster.appliance_served,
            cluster_ok=not cluster.error and cluster.node is not None,
            plan=self.inspection["plan"],
            gpu_memory=self.inspection["gpuMemory"],
        )

    # -- persistence: every change is saved before anything depends on it ---------------------

    def save(
        self, state: State, event: str, ev: Evidence, now: Instant, *, journal: bool = True
    ) -> State:
        """Persist (fsync) a new state. A transition is committed together with its journal
        entry, which the store then appends (the next load does, if that append is lost)."""
        self.d.crash(f"before-save:{event}")
        if journal and is_transition(event):
            entry = transition_entry(
                event,
                state,
                at=rfc3339(now.wall),
                boot_id=ev.boot_id or "",
                evidence_digest=sha256_hex(
                    {"boot": ev.boot_id, "kernel": ev.kernel.release, "pci": ev.pci.display_ids}
                ),
            )
            state = self.d.store.commit(state, entry)
        else:
            self.d.store.save(state)
        self.d.crash(f"after-save:{event}")
        return state

    # -- Kubernetes reads ---------------------------------------------------------------------

    def read_cluster(self, state: State) -> Cluster:
        kube = self.d.kube
        if kube is None:
            return Cluster(error="no Kubernetes client")
        try:
            # a share of the tick's budget: the local step runs soon, whatever the API does
            with kube.budget(self.d.limits.kube_read_budget_s):
                node = kube.read_node(self.d.node_name)
                uid = str(node.get("metadata", {}).get("uid", ""))
                request = kube.get_hostoperation(NAMESPACE, hostoperation_name(uid))
                actions = {(request or {}).get("spec", {}).get("action")}
                if state.operation is not None and not state.operation.terminal:
                    actions.add(state.operation.action)
                kinds = [OPERATIONS[a] for a in actions if a in OPERATIONS]
                module = None
                if any(kind.reads_module_activation for kind in kinds):
                    module = kube.get_module_activation(NAMESPACE, MODULE_NAME)
                appliance, served = None, None
                op = state.operation
                if op is not None and not op.terminal and op.phase in REGISTRATION_PHASES:
                    served = kube.serves(f"{GROUP}/{VERSION}", APPLIANCES)
                    appliance = kube.get_appliance(NAMESPACE, APPLIANCE_NAME) if served else None
        except KubeError as exc:
            self.notes.append(f"kubernetes: {exc}")
            if isinstance(exc, KubeConfigError):
                # the local operation still advances; the exit code tells the operator
                self.exit_code = exc.exit_code
            return Cluster(error=str(exc))
        return Cluster(
            node=node,
            request=request,
            module_activation=module,
            appliance=appliance,
            appliance_served=served,
        )

    # -- 1. supervise the active operation's request ------------------------------------------

    def supervise(self, state: State, ev: Evidence, now: Instant, cluster: Cluster) -> State:
        op = state.operation
        if op is not None and not op.name and not cluster.error:  # migrated: legacy_state.py
            op = adopt_request(op, cluster.request, hostoperation_name(cluster.node_uid))
            state = self.save(replace(state, operation=op), "adopted", ev, now, journal=False)
        if op is None or op.terminal or cluster.error:
            return state
        request = cluster.request
        uid = str((request or {}).get("metadata", {}).get("uid", ""))
        if request is None or uid != op.request_uid:
            message = (
                "The execution state was removed: the HostOperation of this active operation was "
                "deleted. The worker stopped it; run `magicstick-host recover` at the console."
            )
            stopped = self.change(op, SetPhase("Interrupted", message), ev, now)
            block = Block("execution-state-removed", message, rfc3339(now.wall))
            return self.save(
                replace(state, operation=stopped, block=block), "execution-state-removed", ev, now
            )
        if request_digest(uid, request.get("spec") or {}) != op.request_digest:
            message = "The request changed after it was accepted; the operation was stopped."
            stopped = self.change(op, SetPhase("Interrupted", message), ev, now)
            return self.save(self.record_end(state, stopped), "request-changed", ev, now)
        return state

    # -- 2. intake of a new request -----------------------------------------------------------

    def intake(self, state: State, ev: Evidence, now: Instant, cluster: Cluster) -> State:
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
            plan=self.inspection["plan"],
            gpu_memory=self.inspection["gpuMemory"],
            shutdown_scheduled=ev.services.shutdown_scheduled is not None,
            memory_capability=gpu_memory_capability(ev, self.d.limits),
        )
        review = review_request(request, state, facts, self.d.limits)
        if isinstance(review, Ignored):
            return state
        name = str(request["metadata"].get("name", ""))
        if isinstance(review, Rejected):
            status = {
                "phase": "Rejected",
                "message": clip_message(review.message),
                "requestId": review.request_id,
                "startedAt": rfc3339(now.wall),
                "updatedAt": rfc3339(now.wall),
                "bootId": ev.boot_id or "",
            }
            entry = ProcessedRequest(
                review.uid, review.request_id, "Rejected", status, NAMESPACE, name
            )
            self.notes.append(f"rejected {review.request_id}: {review.message}")
            return self.save(
                state.remember(entry, self.d.limits.processed_request_ids_kept), "rejected", ev, now
            )
        assert isinstance(review, Accepted) and ev.boot_id is not None
        kind = OPERATIONS[review.action]
        op = ops.start_operation(
            review,
            namespace=NAMESPACE,
            name=name,
            boot_id=ev.boot_id,
            wall=now.wall,
            boottime=now.boottime,
            reboot_budget=kind.reboot_budget,
            data=kind.initial_data(review, self.situation(ev, now, cluster)),
        )
        entry = ProcessedRequest(review.uid, review.request_id, "Accepted")
        accepted = replace(
            state.remember(entry, self.d.limits.processed_request_ids_kept), operation=op
        )
        return self.save(accepted, "accepted", ev, now)

    # -- 3. advance the current operation by at most one step ---------------------------------

    def advance(self, state: State, ev: Evidence, now: Instant, cluster: Cluster) -> State:
        op = state.operation
        if op is None or op.terminal or state.block is not None:
            return state
        decision = ops.too_late(op, now.wall) or OPERATIONS[op.action].decide(
            op, self.situation(ev, now, cluster)
        )
        if isinstance(decision, Wait):
            waited = ops.touch_message(op, decision.message, wall=now.wall)
            if waited is op:
                return state
            return self.save(replace(state, operation=waited), "waiting", ev, now, journal=False)
        if isinstance(decision, ClassifiedStep):
            assert ev.boot_id is not None
            done = ops.apply_classification(
                op, decision, boot_id=ev.boot_id, wall=now.wall, boottime=now.boottime
            )
            return self.save(self.record_end(state, done), "classified", ev, now)
        if isinstance(decision, SetPhase):
            changed = self.change(op, decision, ev, now)
            return self.save(self.record_end(state, changed), "phase", ev, now)
        return self.run_step(state, op, decision, ev, now, cluster)

    def run_step(
        self,
        state: State,
        op: Operation,
        run: RunStep,
        ev: Evidence,
        now: Instant,
        cluster: Cluster,
    ) -> State:
        assert ev.boot_id is not None
        over = ops.over_budget(op, run)
        if over is not None:
            return self.save(
                self.record_end(state, self.change(op, over, ev, now)), "budget", ev, now
            )
        intent = ops.begin_step(op, run, boot_id=ev.boot_id, wall=now.wall, boottime=now.boottime)
        state = self.save(replace(state, operation=intent), f"intent:{run.step}", ev, now)
        self.d.crash(f"before-effect:{run.step}")
        ok, detail = perform(
            run.step, run.inputs, self.effect_ports(state, ev, cluster), op.request_uid
        )
        self.d.crash(f"after-effect:{run.step}")
        after = self.d.clock.now()
        done = ops.finish_step(
            intent,
            run,
            ok=ok,
            detail=detail,
            boot_id=ev.boot_id,
            wall=after.wall,
            boottime=after.boottime,
        )
        return self.save(self.record_end(state, done), f"outcome:{run.step}", ev, after)

    def effect_ports(self, state: State, ev: Evidence, cluster: Cluster) -> EffectPorts:
        store = self.d.store
        work_dir = store.directory

        def heartbeat() -> None:
            # a long step must not let the report go stale; best effort, nothing saved
            try:
                publish_report(self, state, ev, self.d.clock.now(), cluster, save=False)
            except KubeError as exc:
                self.notes.append(f"heartbeat report failed: {exc}")

        return EffectPorts(
            runner=self.d.runner,
            kube=self.d.kube,
            hostfs=RootedHostFS(self.d.root),
            playbooks_dir=self.d.playbooks_dir,
            work_dir=work_dir,
            log_path=store.op_log_path,
            playbook_timeout_s=self.d.limits.playbook_timeout_s,
            heartbeat=heartbeat,
        )

    # -- helpers ------------------------------------------------------------------------------

    def change(self, op: Operation, change: SetPhase, ev: Evidence, now: Instant) -> Operation:
        return ops.set_phase(
            op, change, boot_id=ev.boot_id or op.phase_boot_id, wall=now.wall, boottime=now.boottime
        )

    def record_end(self, state: State, op: Operation) -> State:
        """Put the operation back; once terminal, its phase is what the processed list keeps."""
        state = replace(state, operation=op)
        if op.terminal:
            entry = ProcessedRequest(op.request_uid, op.request_id, op.phase)
            state = state.remember(entry, self.d.limits.processed_request_ids_kept)
        return state
