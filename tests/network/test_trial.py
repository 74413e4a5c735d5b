"""The network trial on a simulated host: kept when confirmed, rolled back on time by its own
timer (no tick, no Kubernetes), restored early in boot after a power loss at every boundary,
and never overwriting concurrent local changes."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from magicstick_host.domain.network.trial import success_problems
from magicstick_host.network import trial_steps as steps
from magicstick_host.network.rollback import run_boot_recovery, run_deadline_rollback
from magicstick_host.sim.faults import SimulatedCrash
from magicstick_host.sim.network import GENERATE_FAILS
from magicstick_host.sim.writer import load_host, write_host
from tests.network.helpers import (
    CLUSTER_ETH,
    CLUSTER_WIFI,
    HOME_PASSPHRASE,
    FakeClock,
    ethernet,
    inventory,
    netplan_files,
    sim_host,
    wifi,
)
from tests.network.trial_helpers import CrashAt, Trial

MANAGED = "90-magicstick-network.yaml"


def make(tmp: Path, scenario: str = "network-ethernet-dhcp") -> Trial:
    root = sim_host(tmp, scenario)
    return Trial(root=root, state_dir=tmp / "state", clock=FakeClock(), crash=CrashAt())


def live_ipv4(trial: Trial, name: str) -> tuple[str, ...]:
    view = inventory(trial.root).interface(name)
    assert view is not None
    return view.ipv4


def test_a_confirmed_change_is_kept(tmp_path: Path) -> None:
    t = make(tmp_path)
    record = t.run(ethernet(), (CLUSTER_ETH,))
    assert record.stage == "awaiting" and record.deadline is not None
    assert record.deadline.boottime == t.clock.boottime + 180
    assert t.timers() == {"magicstick-host-network-rollback": 180}
    assert sorted(netplan_files(t.root)) == [MANAGED]
    mode = stat.S_IMODE((t.root / "etc/netplan" / MANAGED).stat().st_mode)
    assert mode == 0o600
    assert live_ipv4(t, "enp2s0") == ("10.20.0.33/24",)
    after = inventory(t.root, (CLUSTER_ETH,))
    assert success_problems(record, after,
                            managed_sha256_now=steps.managed_sha256_now(t.ports)) == []
    with t.store.lock(wait_s=1):
        done = steps.keep(t.ports, record)
    assert (done.outcome, done.stage) == ("succeeded", "confirmed")
    assert t.timers() == {}
    assert not t.store.backup_path.exists() and t.store.read_settings() is None
    # a rollback started late anyway finds the trial ended and leaves it alone
    t.clock.advance(300)
    late = run_deadline_rollback(t.deps())
    assert late.exit_code == 0 and "has ended (succeeded)" in late.summary
    assert live_ipv4(t, "enp2s0") == ("10.20.0.33/24",)


def test_unconfirmed_rolls_back_on_time_by_itself(tmp_path: Path) -> None:
    t = make(tmp_path)
    before = netplan_files(t.root)
    t.run(ethernet(), (CLUSTER_ETH,))
    assert netplan_files(t.root) != before
    result = t.fire_timer()
    assert result.exit_code == 0, result.summary
    assert result.trial is not None
    assert (result.trial.outcome, result.trial.outcome_by) == ("rolled-back", "deadline")
    assert netplan_files(t.root) == before  # byte for byte
    assert live_ipv4(t, "enp2s0") == ("10.20.0.10/24",)
    assert t.timers() == {}
    assert not t.store.backup_path.exists() and t.store.read_settings() is None


def test_the_rollback_waits_for_its_deadline(tmp_path: Path) -> None:
    t = make(tmp_path)
    t.run(ethernet(), (CLUSTER_ETH,))
    t.clock.advance(120)
    early = run_deadline_rollback(t.deps())
    assert "has not passed" in early.summary and early.trial is not None
    assert early.trial.stage == "awaiting"
    assert MANAGED in netplan_files(t.root)


def test_a_wrong_wifi_key_loses_the_link_and_comes_back(tmp_path: Path) -> None:
    t = make(tmp_path, "network-wifi-cluster")
    record = t.run(wifi(password="a wrong passphrase"), (CLUSTER_WIFI,))
    after = inventory(t.root, (CLUSTER_WIFI,))
    problems = success_problems(record, after,
                                managed_sha256_now=steps.managed_sha256_now(t.ports))
    assert any("no IPv4" in p for p in problems)
    assert any(CLUSTER_WIFI in p for p in problems)
    assert any("not connected" in p for p in problems)
    assert t.fire_timer().trial.outcome == "rolled-back"  # type: ignore[union-attr]
    wifi_view = inventory(t.root, (CLUSTER_WIFI,)).interface("wlp3s0")
    assert wifi_view is not None and wifi_view.wifi is not None
    assert wifi_view.wifi.connected_ssid == "Home" and wifi_view.cluster_addresses


def test_an_empty_password_keeps_the_saved_key(tmp_path: Path) -> None:
    t = make(tmp_path, "network-wifi-cluster")
    record = t.run(wifi(password=""), (CLUSTER_WIFI,))
    managed = (t.root / "etc/netplan" / MANAGED).read_text()
    assert HOME_PASSPHRASE in managed
    after = inventory(t.root, (CLUSTER_WIFI,))
    assert success_problems(record, after,
                            managed_sha256_now=steps.managed_sha256_now(t.ports)) == []


def test_netplan_refusing_the_configuration_restores_without_applying(tmp_path: Path) -> None:
    t = make(tmp_path)
    before = netplan_files(t.root)
    host = load_host(t.root)
    assert host.network is not None
    host.network.faults.append(GENERATE_FAILS)
    write_host(host, t.root)
    record = t.run(ethernet())
    assert record.outcome == "failed" and "netplan refused" in record.message
    assert netplan_files(t.root) == before and t.timers() == {}
    assert t.store.read_settings() is None


def test_concurrent_local_changes_are_never_overwritten(tmp_path: Path) -> None:
    t = make(tmp_path)
    t.run(ethernet(), (CLUSTER_ETH,))
    foreign = t.root / "etc/netplan/99-admin.yaml"
    foreign.write_text("network: {version: 2}\n")
    managed = (t.root / "etc/netplan" / MANAGED).read_bytes()
    result = t.fire_timer()
    assert result.trial is not None and result.trial.outcome == "failed"
    assert "Concurrent local changes: 99-admin.yaml" in result.trial.message
    assert foreign.read_text() == "network: {version: 2}\n"
    assert (t.root / "etc/netplan" / MANAGED).read_bytes() == managed
    assert t.store.backup_path.exists()  # kept for the administrator
    assert t.store.read_settings() is None


TRIAL_POINTS = ["before-backup", "before-record", "before-write", "before-generate",
                "before-arm", "before-apply", "after-apply"]


@pytest.mark.parametrize("point", TRIAL_POINTS)
def test_a_power_loss_at_any_boundary_boots_the_old_configuration(
    tmp_path: Path, point: str
) -> None:
    t = make(tmp_path)
    before = netplan_files(t.root)
    t.crash = CrashAt(point)
    with pytest.raises(SimulatedCrash):
        t.run(ethernet(), (CLUSTER_ETH,))
    assert point in t.crash.seen
    result = t.power_cycle()
    assert result.exit_code == 0, result.summary
    assert netplan_files(t.root) == before
    assert live_ipv4(t, "enp2s0") == ("10.20.0.10/24",)
    assert live_ipv4(t, "enp1s0") == (f"{CLUSTER_ETH}/24",)
    record = t.store.load_trial()
    if point in ("before-backup", "before-record"):
        assert record is None  # nothing was changed, nothing is recorded
    else:
        assert record is not None
        assert (record.outcome, record.outcome_by) == ("rolled-back", "boot-recovery")
    assert t.store.read_settings() is None or record is None


@pytest.mark.parametrize("point", ["before-restore", "before-restore-generate",
                                   "before-restore-apply"])
def test_a_power_loss_during_the_rollback_is_finished_at_boot(tmp_path: Path, point: str) -> None:
    t = make(tmp_path)
    before = netplan_files(t.root)
    t.run(ethernet(), (CLUSTER_ETH,))
    t.crash.point = point
    with pytest.raises(SimulatedCrash):
        t.fire_timer()
    assert t.power_cycle().exit_code == 0
    assert netplan_files(t.root) == before
    assert live_ipv4(t, "enp2s0") == ("10.20.0.10/24",)


def test_a_power_loss_after_the_confirmation_keeps_the_new_configuration(tmp_path: Path) -> None:
    t = make(tmp_path)
    record = t.run(ethernet(), (CLUSTER_ETH,))
    t.crash.point = "after-confirm"
    with pytest.raises(SimulatedCrash), t.store.lock(wait_s=1):
        steps.keep(t.ports, record)
    result = t.power_cycle()
    assert result.trial is not None and result.trial.outcome == "succeeded"
    assert sorted(netplan_files(t.root)) == [MANAGED]
    assert live_ipv4(t, "enp2s0") == ("10.20.0.33/24",)
    assert not t.store.backup_path.exists() and t.store.read_settings() is None


def test_the_boot_recovery_leaves_a_trial_of_this_boot_alone(tmp_path: Path) -> None:
    t = make(tmp_path)
    t.run(ethernet(), (CLUSTER_ETH,))
    result = run_boot_recovery(t.deps())
    assert "running in this boot" in result.summary
    assert MANAGED in netplan_files(t.root)


def test_a_busy_trial_lock_is_reported_not_waited_for_forever(tmp_path: Path) -> None:
    t = make(tmp_path)
    t.run(ethernet(), (CLUSTER_ETH,))
    t.clock.advance(200)
    deps = t.deps()
    deps.lock_wait_s = 0.2
    with t.store.lock(wait_s=1):
        result = run_deadline_rollback(deps)
    assert result.exit_code == 75
    assert run_deadline_rollback(t.deps()).trial.outcome == "rolled-back"  # type: ignore[union-attr]


def test_the_effects_name_the_same_netplan_paths_as_the_evidence() -> None:
    """effects/network.py keeps its own copy of the paths (effects import no domain module)."""
    from magicstick_host.domain.network import evidence as network_evidence
    from magicstick_host.effects import network as effects

    assert effects.NETPLAN_DIR == network_evidence.NETPLAN_DIR
    assert effects.MANAGED_NETPLAN_NAME == network_evidence.MANAGED_NETPLAN_NAME
    assert effects.MAX_NETPLAN_FILE_BYTES == network_evidence.MAX_NETPLAN_FILE_BYTES
