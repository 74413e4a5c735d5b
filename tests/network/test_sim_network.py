"""The simulated network: netplan's merge and refusals, a link that really goes down on a
wrong configuration, the trial's timer, a boot, and the `network-rollback` /
`network-recovery` commands on a simulated host."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner

from magicstick_host.cli.network_cmd import network_recovery_command, network_rollback_command
from magicstick_host.ports.network_store import NetworkStore
from magicstick_host.sim.network import boot_network, start_network
from magicstick_host.sim.runner import SimRunner, read_effects
from magicstick_host.sim.writer import load_host, write_host
from tests.network.helpers import CLUSTER_ETH, ethernet, netplan_files, sim_host
from tests.network.test_trial import make


def ip_v4(root: Path, name: str) -> list[str]:
    out = SimRunner(root).run(["ip", "-j", "address", "show"], timeout=5).stdout
    link = next(lk for lk in json.loads(out) if lk["ifname"] == name)
    return [f"{a['local']}/{a['prefixlen']}" for a in link["addr_info"] if a["family"] == "inet"]


def write_netplan(root: Path, name: str, text: str) -> None:
    path = root / "etc/netplan" / name
    path.write_text(text)


def apply(root: Path) -> tuple[int, str]:
    result = SimRunner(root).run(["netplan", "apply"], timeout=45)
    return result.returncode, result.stderr


def test_netplan_get_merges_like_netplan(tmp_path: Path) -> None:
    root = sim_host(tmp_path, "network-ethernet-dhcp")
    out = SimRunner(root).run(["netplan", "get", "all"], timeout=5)
    assert out.ok and "enp1s0" in out.stdout and "wlp3s0" in out.stdout


def test_netplan_refuses_what_netplan_refuses(tmp_path: Path) -> None:
    root = sim_host(tmp_path, "network-ethernet-static")
    before = ip_v4(root, "enp1s0")
    for text in ("network: [\n", "network:\n  ethernets:\n    enp1s0:\n      addresses: [1.2.3]\n",
                 "network:\n  wifis:\n    wlp3s0: {dhcp4: true}\n",
                 "network:\n  wifis:\n    wlp3s0:\n      access-points:\n        X:\n"
                 "          password: short\n"):
        write_netplan(root, "99-bad.yaml", text)
        code, error = apply(root)
        assert code == 1 and "Error in network definition" in error
        assert ip_v4(root, "enp1s0") == before
    (root / "etc/netplan/99-bad.yaml").unlink()
    assert apply(root)[0] == 0


def test_the_link_goes_down_when_the_configuration_is_wrong(tmp_path: Path) -> None:
    root = sim_host(tmp_path, "network-ethernet-static")
    assert ip_v4(root, "enp1s0") == ["192.168.1.20/24"]
    write_netplan(root, "01-static.yaml", "network:\n  ethernets:\n    enp1s0: {dhcp4: false}\n")
    assert apply(root)[0] == 0
    assert ip_v4(root, "enp1s0") == []
    routes = SimRunner(root).run(["ip", "-j", "-4", "route", "show", "default"], timeout=5)
    assert json.loads(routes.stdout) == []


def test_a_hidden_network_needs_hidden_and_a_key_needs_the_right_key(tmp_path: Path) -> None:
    root = sim_host(tmp_path, "network-wifi-hidden")
    link = SimRunner(root).run(["iw", "dev", "wlp3s0", "link"], timeout=5).stdout
    assert "SSID: Attic" in link
    path = root / "etc/netplan/01-hidden.yaml"
    path.write_text(path.read_text().replace("          hidden: true\n", ""))
    apply(root)
    assert SimRunner(root).run(["iw", "dev", "wlp3s0", "link"], timeout=5).stdout == (
        "Not connected.\n")
    assert ip_v4(root, "wlp3s0") == []


def test_the_timer_and_a_boot(tmp_path: Path) -> None:
    root = sim_host(tmp_path, "network-ethernet-dhcp")
    runner = SimRunner(root)
    argv = ["systemd-run", "--unit=u", "--on-active=180s"]
    assert runner.run(argv, timeout=5).ok
    assert not runner.run(argv, timeout=5).ok  # already loaded
    assert runner.run(["systemctl", "stop", "u.timer"], timeout=5).ok
    assert runner.run(["systemctl", "stop", "u.timer"], timeout=5).returncode == 5
    assert runner.run(argv, timeout=5).ok
    assert not runner.run(["systemd-run", "--unit=v", "--on-active=5", "/bin/true"],
                          timeout=5).ok
    kinds = [e["effect"] for e in read_effects(root)]
    assert kinds.count("timer-armed") == 4 and kinds.count("timer-stopped") == 2
    host = load_host(root)
    boot_network(host)
    write_host(host, root)
    assert load_host(root).network.timers == {}  # type: ignore[union-attr]
    assert ip_v4(root, "enp1s0") == []  # not started yet
    host = load_host(root)
    start_network(host)
    write_host(host, root)
    assert ip_v4(root, "enp1s0") == [f"{CLUSTER_ETH}/24"]


def test_hosts_without_a_network_model_do_not_simulate_it(tmp_path: Path) -> None:
    root = sim_host(tmp_path, "strix-halo-ubuntu-26.04-ready")
    assert SimRunner(root).run(["ip", "-j", "address", "show"], timeout=5).returncode == 127


def test_the_rollback_and_recovery_commands(tmp_path: Path) -> None:
    t = make(tmp_path)
    before = netplan_files(t.root)
    t.run(ethernet(), (CLUSTER_ETH,))
    args = ["--root", str(t.root), "--state-dir", str(t.state_dir), "--executor", "sim"]
    # the commands read the real CLOCK_BOOTTIME: put the recorded deadline on that clock
    store = NetworkStore(t.state_dir)
    record = store.load_trial()
    assert record is not None and record.deadline is not None
    store.save_trial(replace(record, deadline=replace(record.deadline, boottime=1e12)))
    early = CliRunner().invoke(network_rollback_command, args, standalone_mode=False)
    assert early.exit_code == 0 and "nothing to do" in early.output
    store.save_trial(replace(record, deadline=replace(record.deadline, boottime=0.0)))
    done = CliRunner().invoke(network_rollback_command, args, standalone_mode=False)
    assert done.exit_code == 0, done.output
    assert "not confirmed before its deadline" in done.output
    assert netplan_files(t.root) == before
    again = CliRunner().invoke(network_recovery_command, args, standalone_mode=False)
    assert again.exit_code == 0 and "has ended (rolled-back)" in again.output
    bad = CliRunner().invoke(network_rollback_command, ["--root", str(t.root), "--state-dir",
                                                         str(t.state_dir)],
                             standalone_mode=False)
    assert bad.exception is not None and "needs --root /" in str(bad.exception)
