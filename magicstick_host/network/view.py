"""The tick's network: the `network` section of the report and what the network operations
see, and the tidying of what ended trials and unconsumed requests left behind.

Each tick, after the cluster reads and before intake:
1. tidy: a trial that has ended and whose operation has ended too (or was never ours) is
   cleaned up and its record removed; the approved settings (with the password) are removed
   whenever no network operation is running; this node's request Secrets that nobody consumed
   within 10 minutes are deleted (each with its UID as the precondition);
2. view: the inventory from the evidence and the Node's InternalIP addresses, the section with
   its keyed id (the persistent HMAC key, created once), the last scan, the trial record.
   An unfinished trial is `HOST_BUSY`: nothing else starts until it has ended.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from magicstick_host.domain.cluster import ClusterView
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.limits import Limits
from magicstick_host.domain.network.capability import (
    network_inventory,
    network_section,
    node_internal_ips,
)
from magicstick_host.domain.network.evidence import NetworkEvidence
from magicstick_host.domain.network.operation import NETWORK_ACTIONS, trial_blocks
from magicstick_host.domain.network.request import (
    NODE_LABEL,
    SECRET_NAMESPACE,
    stale_request_secrets,
    sweep_due,
)
from magicstick_host.domain.network.trial import TrialRecord
from magicstick_host.domain.offers import HOST_BUSY
from magicstick_host.domain.operations.network_common import (
    NETWORK_INVENTORY,
    NETWORK_SCAN_AT,
    NETWORK_SETTINGS_KEPT,
    NETWORK_TRIAL,
)
from magicstick_host.domain.state import Operation
from magicstick_host.errors import KubeError, LockBusyError
from magicstick_host.ports.clock import Instant
from magicstick_host.ports.kube import KubePort
from magicstick_host.ports.network_store import NetworkStore, NetworkStoreError

if TYPE_CHECKING:
    from typing import Any

# the tidying never waits long for the trial lock: a rollback holding it finishes on its own
TIDY_LOCK_WAIT_S = 5.0
NOT_COLLECTED = NetworkEvidence(problems=("the network of this host was not inspected",))


class TickPorts(Protocol):
    """What of the tick's ports the network needs (tick.TickDeps has them): the trial's store
    in the state directory comes built from the composition root (app.tick_deps)."""

    @property
    def network_store(self) -> NetworkStore: ...

    @property
    def kube(self) -> KubePort | None: ...

    @property
    def limits(self) -> Limits: ...


def running_network_op(active: Operation | None) -> Operation | None:
    if active is None or active.terminal or active.action not in NETWORK_ACTIONS:
        return None
    return active


def network_capabilities(
    deps: TickPorts, active: Operation | None, ev: Evidence, cluster: ClusterView, now: Instant
) -> dict[str, Any]:
    """The network capabilities of this tick (`network`, the inventory, the trial record,
    HOST_BUSY), after the tidying. What the tidying met goes to the log at debug level."""
    store = deps.network_store
    notes: list[str] = []
    trial, problem = _tidy(store, running_network_op(active), notes)
    if deps.kube is not None and cluster.ok and sweep_due(
        store.load_sweep(), boot_id=ev.boot_id or "", boottime=now.boottime,
        interval_s=deps.limits.network_secret_sweep_interval_s,
    ):
        notes += _sweep_stale_secrets(deps.kube, store, cluster, ev.boot_id or "", now,
                                      deps.limits)
    inventory = network_inventory(ev.network or NOT_COLLECTED, node_internal_ips(cluster.node))
    try:
        key: bytes | None = store.id_key()
        key_problem = ""
    except (NetworkStoreError, OSError) as exc:
        key, key_problem = None, str(exc)
    section = network_section(inventory, key, key_problem=key_problem)
    scan = store.load_scan()
    if scan is not None:
        section["scan"] = scan
    capabilities: dict[str, Any] = {
        "network": section, NETWORK_INVENTORY: inventory, NETWORK_TRIAL: trial,
        # whether the read-network-request step got as far as keeping the approved settings
        NETWORK_SETTINGS_KEPT: store.settings_present(),
        NETWORK_SCAN_AT: str((scan or {}).get("observedAt", "")),
    }
    busy = problem or trial_blocks(trial)
    if busy:
        capabilities[HOST_BUSY] = busy
    if notes:  # debugging aid only; logging is imported just then (it costs an idle tick ~5 ms)
        import logging

        for note in notes:
            logging.getLogger(__name__).debug("%s", note)
    return capabilities


def _tidy(store: NetworkStore, running: Operation | None,
          notes: list[str]) -> tuple[TrialRecord | None, str]:
    """(the trial record left, and why nothing may start when it cannot be read)."""
    try:
        with store.lock(wait_s=TIDY_LOCK_WAIT_S):
            trial = store.load_trial()
            ours = running is not None and trial is not None \
                and trial.request_id == running.request_id
            if trial is not None and trial.finished and not ours:
                # the trial's steps and their effects load only for a trial to clean up
                from magicstick_host.network.trial_steps import clean_after_end

                clean_after_end(store, trial)
                store.remove_trial()
                trial = None
            if running is None:
                store.remove_settings()
            return trial, ""
    except LockBusyError:
        notes.append("network: the trial lock is held (a rollback is running)")
        try:
            return store.load_trial(), ""
        except NetworkStoreError as exc:
            return None, f"The network trial record cannot be read: {exc}"
    except NetworkStoreError as exc:
        return None, f"The network trial record cannot be read: {exc}"


def _sweep_stale_secrets(kube: KubePort, store: NetworkStore, cluster: ClusterView,
                         boot_id: str, now: Instant, limits: Limits) -> list[str]:
    uid = cluster.node_uid
    try:
        with kube.budget(limits.kube_read_budget_s):
            found = kube.list_secrets(SECRET_NAMESPACE, f"{NODE_LABEL}={uid}")
            stale = stale_request_secrets(found, node_uid=uid, now=now.wall)
            for name, secret_uid in stale:
                try:
                    kube.delete_secret(SECRET_NAMESPACE, name, secret_uid)
                except KubeError:
                    continue  # gone or replaced meanwhile: not ours to delete any more
    except KubeError as exc:
        return [f"network: the stale request Secrets could not be listed: {exc}"]
    notes = [f"network: deleted {len(stale)} unconsumed request Secret(s)"] if stale else []
    if boot_id:
        try:
            store.save_sweep(boot_id, now.boottime)
        except (NetworkStoreError, OSError) as exc:  # the next tick looks again: no harm
            notes.append(f"network: the Secret sweep time could not be saved: {exc}")
    return notes
