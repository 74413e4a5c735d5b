"""The configure-network and scan-wifi steps as the tick runs them (the composition root adds
them to the tick's table of effects: app.step_effects). Each does what its step says and
returns (ok, detail); a detail never holds a password (the settings stay in the 0600 settings
file, which only these steps read).

- read-network-request: read the request Secret, check it against the rules and the host's
  network now, keep the approved settings (0600), delete the Secret with its UID precondition;
- begin-network-trial, write-network-config, apply-network-config, keep-network-config,
  restore-network-config: one trial step each (trial_steps.py), under the trial lock;
- scan-wifi: `iw dev <if> scan` (25 s), the shaped result saved for the report.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from magicstick_host.collect.network import collect_network
from magicstick_host.domain.network.capability import network_inventory
from magicstick_host.domain.network.netplan_config import managed_document, managed_network
from magicstick_host.domain.network.operation import SecretConsumed, consume_secret
from magicstick_host.domain.network.request import NetworkRef
from magicstick_host.domain.network.scan import scan_section
from magicstick_host.domain.network.settings import NetworkSettings
from magicstick_host.domain.network.trial import Deadline, TrialRecord
from magicstick_host.domain.parsers import ParseError
from magicstick_host.domain.parsers.network import parse_iw_scan
from magicstick_host.effects import network as effects
from magicstick_host.errors import KubeError, KubeNotFoundError
from magicstick_host.network import trial_steps as steps
from magicstick_host.network.trial_steps import TrialPorts
from magicstick_host.ports.network_store import NetworkStore, NetworkStoreError

if TYPE_CHECKING:
    from typing import Any

    from magicstick_host.effects.effect_ports import Effect, EffectPorts

# longer than the deadline rollback holds the lock (netplan apply: 45 s)
LOCK_WAIT_S = 60.0
# the Secret's read and delete, within the tick's Kubernetes budget
SECRET_BUDGET_S = 20.0
Result = tuple[bool, str]


def trial_ports(ports: EffectPorts) -> TrialPorts:
    assert ports.clock is not None, "the network steps need the tick's clock"
    return TrialPorts(root=ports.hostfs.root, state_dir=ports.work_dir, runner=ports.runner,
                      clock=ports.clock, crash=ports.crash)


def read_network_request(inputs: dict[str, Any], ports: EffectPorts, request_uid: str) -> Result:
    kube = ports.kube
    if kube is None:
        return False, "Kubernetes cannot be asked for the request's settings; nothing was changed."
    store = NetworkStore(ports.work_dir)
    ref = NetworkRef(str(inputs["name"]), str(inputs["uid"]))
    namespace = str(inputs["namespace"])
    inventory = network_inventory(collect_network(ports.hostfs, ports.runner),
                                  [str(a) for a in inputs["clusterAddresses"]])
    try:
        with kube.budget(SECRET_BUDGET_S):
            secret = kube.get_secret(namespace, ref.name)
            read = consume_secret(secret, ref, action=str(inputs["action"]),
                                  request_id=str(inputs["requestId"]),
                                  node_uid=str(inputs["nodeUid"]), inventory=inventory)
            if isinstance(read, SecretConsumed):
                # kept before the Secret goes: after a crash here the settings are still known
                store.write_settings(read.settings.to_secret_json())
                _delete(kube.delete_secret, namespace, ref.name, read.secret_uid)
                return True, f"the settings for {read.settings.interface} were checked and kept"
            if read.delete_uid:
                _delete(kube.delete_secret, namespace, ref.name, read.delete_uid)
            return False, read.message
    except KubeError as exc:
        store.remove_settings()
        return False, (f"The request's settings Secret could not be read or deleted ({exc}); "
                       "nothing was changed.")


def _delete(delete: Callable[[str, str, str], None], namespace: str, name: str,
            uid: str) -> None:
    with contextlib.suppress(KubeNotFoundError):  # already gone
        delete(namespace, name, uid)


def _with_trial(ports: EffectPorts, act: Callable[[TrialPorts, TrialRecord], Result]) -> Result:
    tp = trial_ports(ports)
    store = tp.store
    with store.lock(wait_s=LOCK_WAIT_S):
        trial = store.load_trial()
        if trial is None:
            return False, "No network trial is recorded on this host; nothing was changed."
        return act(tp, trial)


def _ended(trial: TrialRecord, ok_outcome: str) -> Result:
    return (trial.outcome == ok_outcome, trial.message) if trial.finished else (True, "")


def begin_network_trial(inputs: dict[str, Any], ports: EffectPorts, request_uid: str) -> Result:
    tp = trial_ports(ports)
    store = tp.store
    with store.lock(wait_s=LOCK_WAIT_S):
        existing = store.load_trial()
        if existing is not None and not existing.finished:
            return False, (f"A network trial of request {existing.request_id} is still recorded "
                           "on this host; nothing was changed.")
        settings = _approved(store)
        if settings is None:
            return False, "The approved network settings are gone; nothing was changed."
        trial, detail = steps.begin(
            tp, request_id=str(inputs["requestId"]), request_uid=request_uid,
            settings=settings.redacted(), boot_id=str(inputs["bootId"]),
            cluster_addresses=[str(a) for a in inputs["clusterAddresses"]])
    return (trial is not None), detail


def _approved(store: NetworkStore) -> NetworkSettings | None:
    try:
        saved = store.read_settings()
    except NetworkStoreError:
        return None
    return NetworkSettings.from_secret_json(saved) if saved is not None else None


def write_network_config(inputs: dict[str, Any], ports: EffectPorts, request_uid: str) -> Result:
    def act(tp: TrialPorts, trial: TrialRecord) -> Result:
        settings = _approved(tp.store)
        if settings is None:
            done = steps.restore(tp, trial, apply=False, by="tick", outcome="failed",
                                 message="The approved network settings are gone; the previous "
                                         "configuration was kept, nothing was applied.")
            return False, done.message
        if trial.stage == "writing":
            # a write cut short: start again from the backed-up files, never from a half
            ok, detail = effects.restore_netplan(
                tp.files, tp.store, [(f.name, f.sha256, f.mode) for f in trial.backup])
            if not ok:
                return False, detail
        inventory = network_inventory(collect_network(ports.hostfs, ports.runner),
                                      trial.cluster_addresses)
        view = inventory.interface(trial.interface)
        if view is None or not inventory.effective:
            done = steps.restore(tp, trial, apply=False, by="tick", outcome="failed",
                                 message=f"The configuration of {trial.interface} cannot be read "
                                         "any more; nothing was applied.")
            return False, done.message
        document = managed_document(managed_network(inventory.effective, view, settings))
        return _ended(steps.write_and_generate(tp, trial, document), "")

    return _with_trial(ports, act)


def apply_network_config(inputs: dict[str, Any], ports: EffectPorts, request_uid: str) -> Result:
    deadline = Deadline(str(inputs["bootId"]), float(inputs["deadlineBoottime"]),
                        str(inputs["deadlineWall"]))

    def act(tp: TrialPorts, trial: TrialRecord) -> Result:
        done = steps.apply_with_deadline(tp, trial, deadline.boot_id, deadline)
        return _ended(done, "") if done.finished else (True, "netplan apply succeeded")

    return _with_trial(ports, act)


def keep_network_config(inputs: dict[str, Any], ports: EffectPorts, request_uid: str) -> Result:
    def act(tp: TrialPorts, trial: TrialRecord) -> Result:
        if trial.finished:
            return trial.outcome == "succeeded", trial.message
        return _ended(steps.keep(tp, trial), "succeeded")

    return _with_trial(ports, act)


def restore_network_config(inputs: dict[str, Any], ports: EffectPorts,
                           request_uid: str) -> Result:
    def act(tp: TrialPorts, trial: TrialRecord) -> Result:
        if trial.finished:
            return trial.outcome == "rolled-back", trial.message
        done = steps.restore(tp, trial, apply=bool(inputs["apply"]), by="tick",
                             message=str(inputs["message"]))
        return _ended(done, "rolled-back")

    return _with_trial(ports, act)


def scan_wifi(inputs: dict[str, Any], ports: EffectPorts, request_uid: str) -> Result:
    tp = trial_ports(ports)
    store = tp.store
    settings = _approved(store)
    store.remove_settings()
    if settings is None:
        return False, "the interface to scan is not known any more"
    raw, detail = effects.scan_wifi(ports.runner, settings.interface)
    if raw is None:
        return False, detail
    try:
        found = parse_iw_scan(raw)
    except ParseError as exc:
        return False, f"the scan result of {settings.interface} cannot be read: {exc}"
    section = scan_section(settings.interface, found, tp.clock.now().wall)
    store.save_scan(section)
    return True, f"{len(section['networks'])} network(s) found on {settings.interface}"


NETWORK_EFFECTS: dict[str, Effect] = {
    "read-network-request": read_network_request,
    "begin-network-trial": begin_network_trial,
    "write-network-config": write_network_config,
    "apply-network-config": apply_network_config,
    "keep-network-config": keep_network_config,
    "restore-network-config": restore_network_config,
    "scan-wifi": scan_wifi,
}
