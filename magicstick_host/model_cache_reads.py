"""The tick's look at the model caches: the inventory and the workloads that block a cleanup,
each at the cadence it needs (model-cache.md, "What users will measure").

- A clear-model-cache request waiting for intake, or the operation running: the caches are
  walked now and the ModelActivations, KubeAI Models and Pods read now (`fresh`), on every
  such tick.
- Otherwise (the report): the cached inventory (collect/model_cache.py) and the blockers last
  read, which are read again once per report interval (`report_min_interval_s`), not every
  tick; they are kept in the state directory between ticks.
The result is the `ModelCacheFacts` the decisions see (Situation.capabilities) and the
report's `modelCache` section.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from magicstick_host.collect.model_cache import ModelCacheInventory
from magicstick_host.collect.model_workloads import read_model_workloads, resolve_host_paths
from magicstick_host.domain.cluster import ClusterView
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.limits import Limits
from magicstick_host.domain.model_cache.blockers import Blockers, find_blockers
from magicstick_host.domain.model_cache.capability import (
    ACTION,
    MODEL_CACHE_FACTS,
    ModelCacheFacts,
    model_cache_section,
)
from magicstick_host.domain.model_cache.inventory import (
    CACHE_ROOTS,
    CacheInventory,
    RootInventory,
)
from magicstick_host.domain.state import State
from magicstick_host.ports.clock import Instant
from magicstick_host.ports.hostfs import HostReadError
from magicstick_host.ports.hosttree import HostTree
from magicstick_host.ports.kube import KubePort
from magicstick_host.ports.model_cache_store import ModelCacheStore

if TYPE_CHECKING:
    from typing import Any

WORKLOADS_VERSION = 1


def needs_fresh(request: dict[str, Any] | None, state: State) -> bool:
    """Intake of a new clear-model-cache request, or a cleanup in progress."""
    op = state.operation
    if op is not None and not op.terminal and op.action == ACTION:
        return True
    if not isinstance(request, dict):
        return False
    spec = request.get("spec")
    if not isinstance(spec, dict) or spec.get("action") != ACTION:
        return False
    uid = str((request.get("metadata") or {}).get("uid", ""))
    seen = op is not None and op.request_uid == uid
    return not seen and state.seen_uid(uid) is None


class ModelCacheReads:
    def __init__(
        self,
        inventory: ModelCacheInventory,
        tree: HostTree,
        workloads_store: ModelCacheStore | None,
    ) -> None:
        self.inventory = inventory
        self.tree = tree
        self.workloads_store = workloads_store
        # whether the last `observe` read the workloads from Kubernetes (tests, the bench)
        self.read_workloads = False

    def observe(
        self,
        kube: KubePort | None,
        state: State,
        cluster: ClusterView,
        now: Instant,
        *,
        boot_id: str,
        node_name: str,
        limits: Limits,
    ) -> ModelCacheFacts:
        fresh = needs_fresh(cluster.request, state)
        inventory = self._inventory(now, boot_id, fresh)
        blockers = self._blockers(kube, cluster, now, boot_id, node_name, limits, fresh)
        section = model_cache_section(inventory, blockers, node_uid=cluster.node_uid)
        return ModelCacheFacts(inventory, blockers, section, fresh, cluster.node_uid)

    def _inventory(self, now: Instant, boot_id: str, fresh: bool) -> CacheInventory:
        try:
            if fresh:
                return self.inventory.walk_now(now, boot_id)
            return self.inventory.for_report(now, boot_id)
        except (OSError, HostReadError) as exc:  # never a guess: untrusted, nothing offered
            roots = tuple(RootInventory(spec.id, None) for spec in CACHE_ROOTS)
            return CacheInventory(roots, problem=f"the caches cannot be read ({exc})"[:300])

    def _blockers(
        self,
        kube: KubePort | None,
        cluster: ClusterView,
        now: Instant,
        boot_id: str,
        node_name: str,
        limits: Limits,
        fresh: bool,
    ) -> Blockers:
        self.read_workloads = False
        if not fresh:
            kept = self._kept(now, boot_id, limits)
            if kept is not None:
                return kept
        if kube is None or cluster.error:
            return Blockers(error=cluster.error or "no Kubernetes client")
        with kube.budget(limits.kube_read_budget_s):
            workloads = read_model_workloads(kube)
        self.read_workloads = True
        blockers = find_blockers(workloads, node_name, resolve_host_paths(self.tree, workloads))
        if self.workloads_store is not None and boot_id:
            self.workloads_store.save({
                "schemaVersion": WORKLOADS_VERSION,
                "bootId": boot_id,
                "readBoottime": max(now.boottime, 0.0),
                "found": list(blockers.found),
                "error": blockers.error,
            })
        return blockers

    def _kept(self, now: Instant, boot_id: str, limits: Limits) -> Blockers | None:
        """The blockers last read, while they are younger than the report's interval."""
        doc = self.workloads_store.load() if self.workloads_store is not None else None
        if doc is None or not boot_id or doc["bootId"] != boot_id:
            return None
        age = now.boottime - float(doc["readBoottime"])
        if age < 0 or age >= limits.report_min_interval_s:
            return None
        return Blockers(found=tuple(doc["found"]), error=doc["error"])


class TickPorts(Protocol):
    """What the tick's dependencies (tick.TickDeps) give the model-cache reads: the reads
    themselves, their stores in the state directory, come built from the composition root
    (app.model_cache_reads)."""

    @property
    def model_cache(self) -> ModelCacheReads: ...
    @property
    def kube(self) -> KubePort | None: ...
    @property
    def node_name(self) -> str: ...
    @property
    def limits(self) -> Limits: ...


def observe_model_cache(
    deps: TickPorts, state: State, ev: Evidence, now: Instant, cluster: ClusterView
) -> dict[str, Any]:
    """This tick's `modelCache` section and the ModelCacheFacts (Situation.capabilities)."""
    facts = deps.model_cache.observe(deps.kube, state, cluster, now, boot_id=ev.boot_id or "",
                          node_name=deps.node_name, limits=deps.limits)
    return {"modelCache": facts.section, MODEL_CACHE_FACTS: facts}

