"""configure-network and scan-wifi end to end (issue 13, "Done when"): the dashboard's request
Secret and HostOperation on the real apiserver, the real tick on a simulated host whose link
really goes down on a wrong configuration, systemd's timer and boot played by the test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from magicstick_host import app_console
from magicstick_host.ports.kube import RealKube
from magicstick_host.sim.network_scenarios import HOME_PASSPHRASE
from tests.kubeserver.fixtures import KubeCluster
from tests.network.helpers import CLUSTER_ETH, CLUSTER_WIFI, inventory
from tests.network.trial_helpers import CrashAt
from tests.network.world import NetworkWorld

pytestmark = pytest.mark.apiserver

MANAGED = "90-magicstick-network.yaml"
STATIC_KEEPING_THE_CLUSTER_ADDRESS = {
    "interface": "enp1s0", "mode": "static", "address": f"{CLUSTER_ETH}/24",
    "gateway": "192.168.1.1", "dns": ["192.168.1.1"], "metric": 100,
}


@pytest.fixture
def world(tmp_path: Path, kube: KubeCluster) -> NetworkWorld:
    return NetworkWorld(tmp_path, kube, "network-ethernet-dhcp", CLUSTER_ETH)


def live_ipv4(w: NetworkWorld, name: str) -> tuple[str, ...]:
    view = inventory(w.root, (w.cluster_ip,)).interface(name)
    assert view is not None
    return view.ipv4


def status(w: NetworkWorld) -> dict[str, Any]:
    return dict(((w.hostop() or {}).get("status")) or {})


def test_a_dhcp_to_static_change_confirmed_in_time_is_kept(world: NetworkWorld) -> None:
    before = world.netplan()
    assert world.network()["supported"] is True
    assert "configure-network" in (world.report() or {})["actions"]
    request_id = world.request_network(STATIC_KEEPING_THE_CLUSTER_ADDRESS)
    awaiting = world.until_phase("AwaitingConfirmation")
    assert awaiting["confirmationDeadline"] > awaiting["updatedAt"][:19]
    assert world.secret(request_id) is None  # read once, then deleted
    assert world.timer_armed()
    assert (world.root / "etc/netplan" / MANAGED).stat().st_mode & 0o777 == 0o600
    world.confirm(request_id)
    assert world.drive_network() == "Succeeded"
    assert not world.timer_armed()
    assert set(world.netplan()) == {MANAGED} and world.netplan() != before
    assert live_ipv4(world, "enp1s0") == (f"{CLUSTER_ETH}/24",)
    enp1s0 = next(i for i in world.network()["interfaces"] if i["name"] == "enp1s0")
    assert enp1s0["configuredMode"] == "static"
    assert world.store.load_trial() is None and world.store.read_settings() is None
    assert not world.store.backup_path.exists()
    assert "confirmationDeadline" not in status(world)


def modes(w: NetworkWorld) -> dict[str, int]:
    return {p.name: p.stat().st_mode & 0o7777 for p in (w.root / "etc/netplan").iterdir()}


def test_an_unconfirmed_change_rolls_back_byte_for_byte(world: NetworkWorld) -> None:
    before, modes_before = world.netplan(), modes(world)
    world.request_network(STATIC_KEEPING_THE_CLUSTER_ADDRESS)
    world.until_phase("AwaitingConfirmation")
    assert world.netplan() != before
    assert world.drive_network() == "RolledBack"
    assert world.netplan() == before
    assert modes(world) == modes_before
    assert "not confirmed before its deadline" in status(world)["message"]
    assert live_ipv4(world, "enp1s0") == (f"{CLUSTER_ETH}/24",)
    world.tick()  # the next tick removes what the ended trial left
    assert world.store.load_trial() is None and not world.timer_armed()
    assert not world.store.backup_path.exists()


def test_confirmed_but_the_cluster_address_lost_rolls_back(tmp_path: Path,
                                                          kube: KubeCluster) -> None:
    w = NetworkWorld(tmp_path, kube, "network-wifi-cluster", CLUSTER_WIFI)
    before = w.netplan()
    wrong_key = {"interface": "wlp3s0", "mode": "dhcp", "ssid": "Home", "security": "wpa-psk",
                 "password": "a wrong passphrase", "hidden": False, "metric": 600}
    request_id = w.request_network(wrong_key)
    w.until_phase("AwaitingConfirmation")
    assert live_ipv4(w, "wlp3s0") == ()  # the link really went down
    w.confirm(request_id)
    w.tick_and_systemd()
    assert status(w)["phase"] == "AwaitingConfirmation"  # confirmed, but not kept
    assert CLUSTER_WIFI in status(w)["message"]
    assert w.drive_network() == "RolledBack"
    assert w.netplan() == before
    assert live_ipv4(w, "wlp3s0") == (f"{CLUSTER_WIFI}/24",)


def unreachable_kube(w: NetworkWorld, tmp_path: Path) -> RealKube:
    """The worker's kubeconfig, pointed at a port where nothing listens."""
    import yaml

    config = yaml.safe_load(Path(w.kube.worker_kubeconfig).read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = "https://127.0.0.1:9"
    path = tmp_path / "unreachable.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return RealKube(str(path), timeout=2)


def test_the_apiserver_gone_right_after_apply_rolls_back_at_the_deadline(
    world: NetworkWorld, tmp_path: Path
) -> None:
    before = world.netplan()
    world.request_network(STATIC_KEEPING_THE_CLUSTER_ADDRESS)
    world.until_phase("AwaitingConfirmation")
    reachable, world.worker = world.worker, unreachable_kube(world, tmp_path)
    world.tick()  # Kubernetes cannot be asked: the trial just waits
    assert world.netplan() != before
    # no tick runs any more; the timer alone brings the old configuration back on time
    trial = world.store.load_trial()
    assert trial is not None and trial.deadline is not None
    world.clock.boottime = trial.deadline.boottime
    result = world.systemd()
    assert result is not None and result.trial is not None
    assert (result.trial.outcome, result.trial.outcome_by) == ("rolled-back", "deadline")
    assert world.netplan() == before
    world.tick()  # still unreachable: the operation learns the outcome locally
    op = world.state().operation
    assert op is not None and op.phase == "RolledBack"
    world.worker = reachable
    assert world.drive_network() == "RolledBack"


# every boundary of the trial: the tick's own (intent saved, effect run, outcome saved) and
# the trial steps' (each stage recorded before its effect)
TRIAL_BOUNDARIES = [
    "before-effect:begin-network-trial", "before-backup", "before-record",
    "after-effect:begin-network-trial", "after-save:outcome:begin-network-trial",
    "before-effect:write-network-config", "before-write", "before-generate",
    "after-effect:write-network-config", "after-save:outcome:write-network-config",
    "before-effect:apply-network-config", "before-arm", "before-apply", "after-apply",
    "after-effect:apply-network-config", "after-save:outcome:apply-network-config",
]


@pytest.mark.parametrize("point", TRIAL_BOUNDARIES)
def test_a_power_loss_at_each_boundary_boots_the_old_configuration(
    world: NetworkWorld, point: str
) -> None:
    before = world.netplan()
    world.request_network(STATIC_KEEPING_THE_CLUSTER_ADDRESS)
    crash = CrashAt(point)
    for _ in range(8):
        world.tick(crash)
        if point in crash.seen:
            break
    assert point in crash.seen, crash.seen
    recovery = world.power_loss()
    assert recovery.exit_code == 0, recovery.summary
    assert world.netplan() == before  # the network starts on the old configuration
    phase = world.drive_network()
    assert phase in ("RolledBack", "Interrupted"), status(world)
    assert world.netplan() == before
    assert live_ipv4(world, "enp1s0") == (f"{CLUSTER_ETH}/24",)
    world.tick()
    assert world.store.load_trial() is None and not world.timer_armed()
    applies = [e for e in world.effects("netplan-apply")]
    assert len(applies) <= 1  # the new configuration is never applied a second time


def test_scan_wifi_publishes_the_networks(world: NetworkWorld) -> None:
    world.network()
    assert "scan-wifi" in (world.report() or {})["actions"]
    world.request_network({"interface": "wlp3s0"}, action="scan-wifi")
    assert world.drive_network() == "Succeeded"
    scan = world.network()["scan"]
    assert scan["interface"] == "wlp3s0"
    ssids = [n["ssid"] for n in scan["networks"]]
    assert ssids[0] == "Home" and "Cafe Libre" in ssids and len(ssids) == len(set(ssids))
    signals = [n["signal"] for n in scan["networks"]]
    assert signals == sorted(signals, reverse=True)
    assert {n["security"] for n in scan["networks"]} <= {"secured", "open"}


# the settings rules and the Secret's own rules, each violated: tests/network/test_rejections.py


def grep(haystack: str, needle: str) -> bool:
    return needle in haystack or json.dumps(needle)[1:-1] in haystack


def everything_written(w: NetworkWorld, *, but: tuple[Path, ...] = ()) -> str:
    """The state directory (state, journal, logs, trial, store), the report, the status."""
    texts = [p.read_text(errors="replace") for p in sorted(w.state_dir.rglob("*"))
             if p.is_file() and p not in but]
    texts.append(json.dumps(w.report()))
    texts.append(json.dumps(w.hostop()))
    return "\n".join(texts)


def test_the_password_is_never_in_state_journal_logs_or_report(tmp_path: Path,
                                                               kube: KubeCluster) -> None:
    # joined to the open "Cafe Libre"; the administrator moves it to the WPA network "Home"
    world = NetworkWorld(tmp_path, kube, "network-wifi-open", CLUSTER_ETH)
    home = {"interface": "wlp3s0", "mode": "dhcp", "ssid": "Home", "security": "wpa-psk",
            "password": HOME_PASSPHRASE, "hidden": False, "metric": 600}
    assert all(HOME_PASSPHRASE.encode() not in data for data in world.netplan().values())
    assert not grep(everything_written(world), HOME_PASSPHRASE)
    request_id = world.request_network(home)
    world.until_phase("AwaitingConfirmation")
    settings_file = world.store.directory / "settings.json"
    assert settings_file.stat().st_mode & 0o777 == 0o600  # the one place it lives meanwhile
    assert not grep(everything_written(world, but=(settings_file,)), HOME_PASSPHRASE)
    world.confirm(request_id)
    assert world.drive_network() == "Succeeded"
    world.tick()
    assert not settings_file.exists()
    assert not grep(everything_written(world), HOME_PASSPHRASE)
    # the host keeps it where netplan needs it, 0600
    managed = world.root / "etc/netplan" / MANAGED
    assert HOME_PASSPHRASE in managed.read_text() and managed.stat().st_mode & 0o777 == 0o600
    wlp = inventory(world.root, (CLUSTER_ETH,)).interface("wlp3s0")
    assert wlp is not None and wlp.wifi is not None and wlp.wifi.connected_ssid == "Home"


def test_a_running_trial_blocks_every_other_operation(world: NetworkWorld) -> None:
    world.request_network(STATIC_KEEPING_THE_CLUSTER_ADDRESS)
    world.until_phase("AwaitingConfirmation")
    assert (world.report() or {})["actions"] == []
    # the dashboard deletes the request mid-trial: the operation stops, the trial runs on
    obj = world.hostop()
    assert obj is not None
    world.kube.delete_hostoperation(world.request_name, obj["metadata"]["uid"])
    world.tick()  # the worker stops (blocked) until the console recovers it
    assert world.store.load_trial() is not None and world.timer_armed()
    assert "Recovered" in app_console.recover(str(world.state_dir), world.node_name)
    world.create_request("reboot")
    world.tick()
    assert status(world)["phase"] == "Rejected"
    assert "network trial is still running" in status(world)["message"]
    assert (world.report() or {})["actions"] == []
    assert world.effects("shutdown") == []
    # the timer ends the trial; then the host offers its actions again
    trial = world.store.load_trial()
    assert trial is not None and trial.deadline is not None
    world.clock.boottime = trial.deadline.boottime
    assert world.systemd() is not None
    world.tick()
    assert world.store.load_trial() is None
    assert "reboot" in (world.report() or {})["actions"]


def test_stale_request_secrets_of_this_node_are_deleted_after_10_minutes(
    world: NetworkWorld,
) -> None:
    from tests.harness.world import random_hex

    request_id = random_hex(32)
    world.create_secret(request_id, STATIC_KEEPING_THE_CLUSTER_ADDRESS)
    world.tick()
    assert world.secret(request_id) is not None
    world.clock.advance(11 * 60)
    world.tick()
    assert world.secret(request_id) is None


def test_the_stale_secret_sweep_runs_every_5_minutes_not_every_tick(world: NetworkWorld) -> None:
    """One LIST per 5 minutes instead of one per tick (issue 15): a Secret that turns stale
    between two looks waits for the next one, and is gone at most 15 minutes after it came."""
    from tests.harness.world import random_hex

    request_id = random_hex(32)
    world.create_secret(request_id, STATIC_KEEPING_THE_CLUSTER_ADDRESS)
    world.tick()  # looks: nothing is stale yet
    world.clock.advance(8 * 60)
    world.tick()  # looks again (8 minutes on): still not stale
    world.clock.advance(3 * 60)
    world.tick()  # 11 minutes old, but the last look was 3 minutes ago
    assert world.secret(request_id) is not None
    world.clock.advance(2 * 60)
    world.tick()
    assert world.secret(request_id) is None


def test_a_lost_sweep_record_only_brings_the_next_look_forward(world: NetworkWorld) -> None:
    from tests.harness.world import random_hex

    request_id = random_hex(32)
    world.create_secret(request_id, STATIC_KEEPING_THE_CLUSTER_ADDRESS)
    world.tick()
    world.clock.advance(11 * 60)
    sweep = world.store.directory / "secret-sweep.json"
    assert sweep.exists()
    sweep.write_text("{not json")
    world.tick()
    assert world.secret(request_id) is None
    assert json.loads(sweep.read_text())["boottime"] >= 11 * 60  # written again
