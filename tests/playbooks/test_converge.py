"""playbooks/converge.yml, run for real by ansible-playbook against simulated host roots.

Every case is a simulated host (magicstick_host/sim/ scenarios) with stand-ins for the host's
own commands (tests/playbooks/converge_roots.py): the playbook runs systemctl, nvidia-smi,
shutdown and update-initramfs from under magicstick_root, so what it did is read from the
root itself: the files, the stand-ins' call log, /run/systemd/shutdown/scheduled. apt and the
K3s installer can only act on this machine: `magicstick_apply: false` skips them (their
options are checked statically), and check mode exercises the K3s install's `creates:` guard
without running anything.

To keep the suite fast, the cases of a kind share ONE ansible-playbook run (one inventory host
per case, `-c local`, each with its own root), as in test_prepare.py.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from magicstick_host.domain.convergence.run import REBOOT_TASK
from magicstick_host.sim.model import Host, Package, PciDevice
from tests.playbooks.conftest import PLAYBOOKS, output, run_playbook
from tests.playbooks.converge_roots import (
    CONTAINERD,
    FIRST_CONVERGENCE,
    NEW_INSTALL,
    NO_IMPORTS,
    calls,
    make_root,
    reboot_happened,
    without_nvidia_packages,
)

pytestmark = [pytest.mark.real_commands, pytest.mark.slow]

NVIDIA_26 = "strix-halo-nvidia-unbound-ubuntu-26.04-ready"
# 2x H200 (class 0x0302, 3D controllers) and the BMC's VGA: no display host (convergence.md)
DATACENTER_24 = "nvidia-datacenter-ubuntu-24.04"
REBOOT_TEXT = (
    "magicstick: rebooting in 1 minute to load the NVIDIA display driver set up by the first "
    "host convergence"
)
MODPROBE = "etc/modprobe.d/90-magicstick-nvidia-drm.conf"
MODULES_LOAD = "etc/modules-load.d/90-magicstick-nvidia-drm.conf"
K3S_LABEL = "etc/rancher/k3s/config.yaml.d/90-magicstick-nvidia.yaml"
PERSISTENCED = "etc/systemd/system/nvidia-persistenced.service.d/90-magicstick.conf"
CONTAINERD_DROPIN = f"{CONTAINERD}/config-v3.toml.d/90-magicstick-nvidia.toml"
MANAGED = (MODPROBE, MODULES_LOAD, K3S_LABEL, PERSISTENCED, CONTAINERD_DROPIN, FIRST_CONVERGENCE)
LOCK_FD = "MAGICSTICK_CONVERGE_LOCK_FD"


def run_converge(
    extra_vars: dict[str, Any], check: bool = False, *, extra_args: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """converge.yml as magicstick-host converge runs it: with MAGICSTICK_CONVERGE_LOCK_FD set
    (tests/converge/test_lock_handoff.py hands a real lock down); the play refuses without."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv(LOCK_FD, "9")
        return run_playbook("converge.yml", extra_vars, check, extra_args=extra_args or [])


# --- per-host results of a multi-host run ---------------------------------------------------------

_TASK = re.compile(r"^TASK \[(.*)\] \**$")
_EVENT = re.compile(r"^(ok|changed|skipping|fatal|failed): \[([^\]]+)\]")
_RECAP_LINE = re.compile(r"^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$", re.MULTILINE)


@dataclass
class HostRun:
    counts: dict[str, int]
    changed: list[str] = field(default_factory=list)  # task names, loop items included
    failed_task: str | None = None
    failure: str = ""
    text: str = ""  # everything printed for this host (debug messages included)


def per_host(proc: subprocess.CompletedProcess[str]) -> dict[str, HostRun]:
    runs = {
        host: HostRun({k: int(v) for k, v in (p.split("=") for p in pairs.split())})
        for host, pairs in _RECAP_LINE.findall(proc.stdout)
    }
    task, current = "?", None
    for line in proc.stdout.splitlines():
        if m := _TASK.match(line):
            task, current = m.group(1), None
            continue
        if m := _EVENT.match(line):
            status, host = m.groups()
            current = runs.get(host)
            if current is None:
                continue
            if status == "changed":
                item = re.search(r"\(item=(.*)\)", line)
                current.changed.append(f"{task}: {item.group(1)}" if item else task)
            if status in ("fatal", "failed"):
                current.failed_task = task
                body = line.split("=> ", 1)[1] if "=> " in line else "{}"
                current.failure = str(json.loads(body).get("msg", ""))
        if current is not None:
            current.text += line + "\n"
    return runs


Case = dict[str, Any]  # variables, with "root" the host root


def run_cases(base: Path, cases: dict[str, Case], *, check: bool = False) -> dict[str, HostRun]:
    hosts = {
        name: {"ansible_connection": "local", "magicstick_apply": False, **variables}
        for name, variables in cases.items()
    }
    inventory = base / f"cases-{len(list(base.glob('cases-*')))}.json"
    inventory.write_text(json.dumps({"all": {"hosts": hosts}}))
    proc = run_converge(
        {}, check, extra_args=["-i", str(inventory), "--limit", "all:!localhost", "--forks", "25"]
    )
    runs = per_host(proc)
    assert set(runs) == set(cases), output(proc)
    return runs


def root_case(base: Path, name: str, scenario: str, **kw: Any) -> Case:
    variables = kw.pop("variables", {})
    return {"magicstick_root": str(make_root(base / name, scenario, **kw)), **variables}


def managed_files(root: Path) -> list[str]:
    return [rel for rel in MANAGED if (root / rel).exists()]


# --- the first convergence, then a second one (after the reboot) ----------------------------------


def vga_instead_of_the_h200s(host: Host) -> None:
    """The datacenter host with an NVIDIA VGA-compatible controller (class 0x0300, an RTX PRO
    workstation card) in place of its H200s, fresh: a display host on Ubuntu 24.04."""
    without_nvidia_packages(host)
    host.pci = [d for d in host.pci if d.vendor != "10de"] + [
        PciDevice("0000:41:00.0", "10de", "2bb1", "030000", "a1", "10de", "204b")]
    host.pci.sort(key=lambda d: d.address)


def nvidia_smi_fails(root: Path) -> None:
    (root / ".stub").mkdir(exist_ok=True)
    (root / ".stub/nvidia-smi-fails").write_text("")


def shutdown_scheduled(root: Path) -> None:
    path = root / "run/systemd/shutdown/scheduled"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("USEC=1900000000000000\nWARN_WALL=1\nMODE=poweroff\nUID=0\n")


@dataclass
class Converged:
    roots: dict[str, Path]
    first: dict[str, HostRun]
    first_calls: dict[str, list[list[str]]]
    second: dict[str, HostRun]
    second_calls: dict[str, list[list[str]]]  # only the calls of the second run


@pytest.fixture(scope="module")
def converged(tmp_path_factory: pytest.TempPathFactory) -> Converged:
    base = tmp_path_factory.mktemp("converge")
    fresh = {"change": without_nvidia_packages}
    cases = {
        "new-install": root_case(base, "new-install", NVIDIA_26, **fresh),
        "new-install-24": root_case(base, "new-install-24", DATACENTER_24,
                                    change=vga_instead_of_the_h200s),
        "existing-host": root_case(base, "existing-host", NVIDIA_26, new_install=False, **fresh),
        "smi-fails": root_case(base, "smi-fails", NVIDIA_26, **fresh),
        "shutdown-pending": root_case(base, "shutdown-pending", NVIDIA_26, **fresh),
        "no-imports": root_case(base, "no-imports", NVIDIA_26, containerd=NO_IMPORTS, **fresh),
        "not-generated": root_case(base, "not-generated", NVIDIA_26, containerd=None, **fresh),
        "cpu-only": root_case(base, "cpu-only", "cpu-only-ubuntu-24.04"),
        "amd-only": root_case(base, "amd-only", "strix-halo-ubuntu-26.04-ready"),
        # as installed: the GPU Operator's driver path, its own nvidia packages
        "compute-gpus": root_case(base, "compute-gpus", DATACENTER_24),
    }
    roots = {name: Path(case["magicstick_root"]) for name, case in cases.items()}
    nvidia_smi_fails(roots["smi-fails"])
    shutdown_scheduled(roots["shutdown-pending"])
    first = run_cases(base, cases)
    first_calls = {name: calls(root) for name, root in roots.items()}
    for root in roots.values():
        reboot_happened(root)
    shutdown_scheduled(roots["shutdown-pending"])  # still pending: it was never replaced
    second = run_cases(base, cases)
    second_calls = {name: calls(root)[len(first_calls[name]):] for name, root in roots.items()}
    return Converged(roots, first, first_calls, second, second_calls)


def test_every_host_converges_twice(converged: Converged) -> None:
    for name, run in {**converged.first, **converged.second}.items():
        assert run.counts["failed"] == 0 and run.failed_task is None, (name, run.text)


def test_first_convergence_of_a_new_install_schedules_exactly_one_reboot(
    converged: Converged,
) -> None:
    for name in ("new-install", "new-install-24", "smi-fails"):
        assert calls(converged.roots[name], "shutdown") == [["shutdown", "-r", "+1", REBOOT_TEXT]]
        assert (converged.roots[name] / "run/systemd/shutdown/scheduled").exists() is False
        marker = (converged.roots[name] / FIRST_CONVERGENCE).read_text()
        assert "reboot: scheduled with shutdown -r +1" in marker, name
        assert "the nvidia-drm options" in marker and "the K3s node label" in marker
        assert oct((converged.roots[name] / FIRST_CONVERGENCE).stat().st_mode & 0o777) == "0o600"
        reboot = [t for t in converged.first[name].changed if t.endswith(REBOOT_TASK)]
        assert reboot == [f"nvidia_display : {REBOOT_TASK}"], name


def test_a_second_run_schedules_no_reboot_and_changes_nothing(converged: Converged) -> None:
    for name, run in converged.second.items():
        assert run.counts["changed"] == 0, (name, run.changed)
        assert ["shutdown"] not in [c[:1] for c in converged.second_calls[name]], name
    for name in ("new-install", "smi-fails"):
        assert len(calls(converged.roots[name], "shutdown")) == 1


def test_the_nvidia_display_files(converged: Converged) -> None:
    root = converged.roots["new-install"]
    assert (root / MODPROBE).read_text().splitlines()[-1] == "options nvidia-drm modeset=1 fbdev=1"
    assert (root / MODULES_LOAD).read_text().splitlines()[-1] == "nvidia-drm"
    label = yaml.safe_load((root / K3S_LABEL).read_text())
    assert label == {"node-label+": ["nvidia.com/gpu.deploy.driver=false"]}
    dropin = (root / PERSISTENCED).read_text()
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in dropin.splitlines():
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
        elif "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            current[key] = value
    assert sections == {
        "Unit": {"StopWhenUnneeded": "false"},
        "Service": {"Restart": "on-failure", "RestartSec": "5s"},
        "Install": {"WantedBy": "multi-user.target"},
    }
    for rel in (MODPROBE, MODULES_LOAD, K3S_LABEL, PERSISTENCED):
        assert oct((root / rel).stat().st_mode & 0o777) == "0o644", rel


def test_persistenced_is_enabled_and_started_only_when_nvidia_smi_works(
    converged: Converged,
) -> None:
    started = converged.first_calls["new-install"]
    assert ["systemctl", "daemon-reload"] in started
    assert ["systemctl", "enable", "nvidia-persistenced.service"] in started
    assert ["nvidia-smi", "-L"] in started
    assert started.index(["nvidia-smi", "-L"]) < started.index(
        ["systemctl", "start", "nvidia-persistenced.service"])
    failing = converged.first_calls["smi-fails"]
    assert ["systemctl", "enable", "nvidia-persistenced.service"] in failing
    assert ["systemctl", "start", "nvidia-persistenced.service"] not in failing
    assert "nvidia-persistenced is enabled but not started" in converged.first["smi-fails"].text
    assert ["update-initramfs", "-u"] in started
    # nothing is enabled, started or rebuilt again once it is in place
    assert converged.second_calls["new-install"] == [
        ["systemctl", "is-enabled", "nvidia-persistenced.service"],
        ["nvidia-smi", "-L"],
        ["systemctl", "is-active", "nvidia-persistenced.service"],
    ]


def test_an_existing_host_and_a_pending_shutdown_get_no_reboot(converged: Converged) -> None:
    existing = converged.roots["existing-host"]
    assert calls(existing, "shutdown") == [] and not (existing / FIRST_CONVERGENCE).exists()
    assert (existing / MODPROBE).exists()  # converged all the same
    pending = converged.roots["shutdown-pending"]
    assert calls(pending, "shutdown") == []
    assert "MODE=poweroff" in (pending / "run/systemd/shutdown/scheduled").read_text()
    assert "a shutdown was already scheduled" in (pending / FIRST_CONVERGENCE).read_text()
    assert "reboot this host by hand" in converged.first["shutdown-pending"].text


def test_the_nvidia_containerd_dropin_is_adopted_only_when_imported(converged: Converged) -> None:
    adopted = (converged.roots["new-install"] / CONTAINERD_DROPIN).read_text()
    assert "runtimes.nvidia" in adopted and "version = 3" in adopted
    for name, why in (("no-imports", "does not import config-v3.toml.d/*.toml"),
                      ("not-generated", "has not generated")):
        assert not (converged.roots[name] / CONTAINERD_DROPIN).exists(), name
        assert not (converged.roots[name] / CONTAINERD / "config-v3.toml.d").exists(), name
        assert why in converged.first[name].text, name
        assert "left alone" in converged.first[name].text or "later convergence" in \
            converged.first[name].text


def test_cpu_only_and_amd_only_hosts_skip_the_nvidia_role(converged: Converged) -> None:
    for name in ("cpu-only", "amd-only", "compute-gpus"):
        root = converged.roots[name]
        assert managed_files(root) == [], name
        assert converged.first_calls[name] == [], name
        assert converged.first[name].changed == [], name
        assert "no NVIDIA display controller" in converged.first[name].text


def test_compute_gpus_keep_the_gpu_operators_driver_path(converged: Converged) -> None:
    """2x H200 (3D controllers, 0x0302) with the BMC's VGA: no driver pin, no nvidia-drm
    files, no K3s label, no persistenced, no reboot; the installed driver is not refused."""
    root = converged.roots["compute-gpus"]
    run = converged.first["compute-gpus"]
    assert run.counts["failed"] == 0 and run.changed == [], run.text
    assert managed_files(root) == [] and calls(root) == []
    assert not (root / "etc/rancher/k3s/config.yaml.d").exists()
    text = " ".join(run.text.split())
    assert "NVIDIA 3D controllers 0000:41:00.0, 0000:c1:00.0 keep the GPU Operator's" in text
    assert "Set the nvidia-drm options" not in run.text  # the role's tasks never ran


def test_an_existing_k3s_is_kept(converged: Converged) -> None:
    for name, run in converged.first.items():
        assert "K3s is installed" in run.text, name
        assert not [t for t in run.changed if t.startswith("k3s : Install K3s")], name
        k3s = converged.roots[name] / "usr/local/bin/k3s"
        assert k3s.read_text() == "#!/bin/sh\n# the existing K3s\n", name


# --- a first convergence that finds everything in place (a retry after a partial first run) ------


def test_a_first_convergence_that_changes_nothing_succeeds(tmp_path: Path) -> None:
    """The new-install host's first convergence finds the driver files, the K3s label and
    nvidia-persistenced already in place: it succeeds, changes nothing and reboots nothing
    (convergence.md), and says a hand reboot is due if the driver does not answer yet."""
    cases = {
        "in-place": root_case(tmp_path, "in-place", NVIDIA_26, new_install=False,
                              change=without_nvidia_packages),
        "in-place-smi-fails": root_case(tmp_path, "in-place-smi-fails", NVIDIA_26,
                                        new_install=False, change=without_nvidia_packages),
    }
    roots = {name: Path(case["magicstick_root"]) for name, case in cases.items()}
    nvidia_smi_fails(roots["in-place-smi-fails"])
    earlier = run_cases(tmp_path, cases)  # what the partial first run already put in place
    for name, root in roots.items():
        assert earlier[name].counts["failed"] == 0, earlier[name].text
        assert not (root / FIRST_CONVERGENCE).exists()
        (root / NEW_INSTALL).parent.mkdir(parents=True, exist_ok=True)
        (root / NEW_INSTALL).write_text("created by the installer media\n")
    before = {name: len(calls(root)) for name, root in roots.items()}
    runs = run_cases(tmp_path, cases)
    for name, root in roots.items():
        run = runs[name]
        assert run.counts["failed"] == 0 and run.failed_task is None, run.text
        assert run.counts["changed"] == 0, (name, run.changed)
        assert ["shutdown"] not in [c[:1] for c in calls(root)[before[name]:]], name
        assert not (root / "run/systemd/shutdown/scheduled").exists()
        assert "reboot: not needed" in (root / FIRST_CONVERGENCE).read_text(), name
    assert "reboot this host by hand" in " ".join(runs["in-place-smi-fails"].text.split())
    assert "reboot this host by hand" not in runs["in-place"].text


# --- refusals: nothing installed, nothing written -------------------------------------------------


def os_release(values: dict[str, str]) -> Callable[[Host], None]:
    def change(host: Host) -> None:
        without_nvidia_packages(host)
        host.os_release = values

    return change


def on_arch(arch: str) -> Callable[[Host], None]:
    def change(host: Host) -> None:
        without_nvidia_packages(host)
        host.kernel.arch = arch

    return change


def installed(*packages: tuple[str, str]) -> Callable[[Host], None]:
    def change(host: Host) -> None:
        without_nvidia_packages(host)
        host.packages += [Package(name, version) for name, version in packages]

    return change


PIN_26 = "595.91.07-0ubuntu0.26.04.1"
REFUSALS: dict[str, tuple[dict[str, Any], str, str]] = {
    # name -> (make_root keywords + variables, failed task, message fragment)
    "debian-13": (
        {"change": os_release({"ID": "debian", "VERSION_ID": '"13"',
                               "PRETTY_NAME": '"Debian GNU/Linux 13 (trixie)"'})},
        "nvidia_display : Refuse an NVIDIA display host that is not a reviewed Ubuntu release "
        "on x86_64",
        'runs ID="debian" VERSION_ID="13" on x86_64: the NVIDIA display driver is reviewed only '
        "for Ubuntu 24.04 and 26.04 on x86_64",
    ),
    "ubuntu-22.04": (
        {"change": os_release({"ID": "ubuntu", "VERSION_ID": '"22.04"'})},
        "nvidia_display : Refuse an NVIDIA display host that is not a reviewed Ubuntu release "
        "on x86_64",
        'VERSION_ID="22.04"',
    ),
    "aarch64": (
        {"change": on_arch("aarch64")},
        "nvidia_display : Refuse an NVIDIA display host that is not a reviewed Ubuntu release "
        "on x86_64",
        "on aarch64",
    ),
    "driver-580": (
        {"change": without_nvidia_packages, "variables": {"magicstick_nvidia_packages": {
            "nvidia-headless-580-open": "580.95.05-0ubuntu1", "nvidia-utils-580":
            "580.95.05-0ubuntu1"}}},
        "nvidia_display : Refuse a driver pin that is not the reviewed one",
        "nvidia-headless-580-open=580.95.05-0ubuntu1, nvidia-utils-580=580.95.05-0ubuntu1 are "
        f"not the reviewed pin for Ubuntu 26.04 (nvidia-headless-595-open={PIN_26}",
    ),
    "driver-inexact": (
        {"change": without_nvidia_packages, "variables": {"magicstick_nvidia_packages": {
            "nvidia-headless-595-open": "595.*", "nvidia-utils-595": PIN_26}}},
        "nvidia_display : Refuse a driver pin that is not the reviewed one",
        "nvidia-headless-595-open=595.*",
    ),
    "branch-580-installed": (
        {},  # the scenario's own nvidia-driver-580-open
        "nvidia_display : Refuse another NVIDIA driver that is already installed",
        "nvidia-compute-utils-580, nvidia-driver-580-open, nvidia-kernel-common-580 are "
        "installed: convergence never replaces another NVIDIA driver",
    ),
    "newer-installed": (
        {"change": installed(("nvidia-utils-595", "595.100.01-0ubuntu0.26.04.1"))},
        "nvidia_display : Refuse a newer driver than the pin (convergence never downgrades)",
        f"nvidia-utils-595 595.100.01-0ubuntu0.26.04.1 is installed, newer than the reviewed "
        f"{PIN_26}",
    ),
    "k3s-channel": (
        {"change": without_nvidia_packages, "variables": {"k3s_version": "stable"}},
        "k3s : Check the K3s version pin",
        'k3s_version "stable" is not an exact K3s release',
    ),
    "k3s-too-old": (
        {"change": without_nvidia_packages, "variables": {"k3s_version": "v1.30.4+k3s1"}},
        "k3s : Check that the K3s release has the containerd v3 drop-in imports",
        "predates the containerd v3 configuration drop-in imports",
    ),
}


@pytest.fixture(scope="module")
def refused(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path],
                                                               dict[str, HostRun]]:
    base = tmp_path_factory.mktemp("refused")
    cases = {name: root_case(base, name, NVIDIA_26, **kw) for name, (kw, _, _) in
             REFUSALS.items()}
    roots = {name: Path(case["magicstick_root"]) for name, case in cases.items()}
    return roots, run_cases(base, cases)


@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_an_unreviewed_os_driver_or_k3s_version_fails_and_installs_nothing(
    refused: tuple[dict[str, Path], dict[str, HostRun]], name: str
) -> None:
    roots, runs = refused
    _, task, message = REFUSALS[name]
    run = runs[name]
    assert run.failed_task == task, run.text
    assert message in " ".join(run.failure.split()), run.failure
    assert run.changed == [] and run.counts["changed"] == 0
    assert managed_files(roots[name]) == []
    assert calls(roots[name]) == []  # no systemctl, nvidia-smi, shutdown or initramfs


# --- K3s in check mode: the creates guard ---------------------------------------------------------


def test_k3s_is_installed_only_where_none_is(tmp_path: Path) -> None:
    cases = {
        "fresh": root_case(tmp_path, "fresh", "cpu-only-ubuntu-24.04", k3s=False),
        "existing": root_case(tmp_path, "existing", "cpu-only-ubuntu-24.04"),
        "existing-override": root_case(tmp_path, "existing-override", "cpu-only-ubuntu-24.04",
                                       variables={"k3s_version": "v1.37.0+k3s1"}),
    }
    runs = run_cases(tmp_path, cases, check=True)
    assert runs["fresh"].changed == ["k3s : Install K3s"], runs["fresh"].text
    assert "Command would have run if not in check mode" not in runs["existing"].text
    for name in ("existing", "existing-override"):
        assert runs[name].changed == [], runs[name].text
        assert "K3s is installed" in runs[name].text
    assert not (tmp_path / "fresh/usr/local/bin/k3s").exists()  # check mode ran nothing


def test_without_the_gate_the_playbook_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(LOCK_FD, raising=False)
    root = make_root(tmp_path / "root", NVIDIA_26, change=without_nvidia_packages)
    proc = run_playbook("converge.yml", {"magicstick_root": str(root), "magicstick_apply": False})
    assert proc.returncode == 2, output(proc)
    assert "MAGICSTICK_CONVERGE_LOCK_FD is not set: run host convergence with `magicstick-host " \
        "converge`" in " ".join(proc.stdout.split())
    assert managed_files(root) == [] and calls(root) == []


# --- static ---------------------------------------------------------------------------------------


def role_tasks(*roles: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for role in roles:
        for path in sorted((PLAYBOOKS / "roles" / role / "tasks").glob("*.yml")):
            found += yaml.safe_load(path.read_text()) or []
    return found


def test_syntax_check() -> None:
    proc = run_playbook("converge.yml", {}, extra_args=["--syntax-check"])
    assert proc.returncode == 0, output(proc)


def test_the_driver_apt_task_is_locked_down() -> None:
    apt = [t for t in role_tasks("nvidia_display") if "ansible.builtin.apt" in t]
    assert [t["name"] for t in apt] == [
        "Refresh the package lists when they are older than an hour",
        "Install the reviewed NVIDIA display driver",
    ]
    install = apt[1]["ansible.builtin.apt"]
    assert install["name"] == "{{ _nvidia_apt_names }}" and install["state"] == "present"
    for key, value in {
        "update_cache": False,
        "install_recommends": False,
        "allow_downgrade": False,
        "allow_unauthenticated": False,
        "allow_change_held_packages": False,
        "fail_on_autoremove": True,
        "autoremove": False,
        "force": False,
    }.items():
        assert install[key] is value, key
    for task in apt:
        assert task["when"] == "magicstick_apply | bool"


def test_the_reviewed_pin() -> None:
    pinned = yaml.safe_load((PLAYBOOKS / "roles/nvidia_display/vars/main.yml").read_text())
    assert pinned["_nvidia_reviewed_packages"] == {
        release: {"nvidia-headless-595-open": f"595.91.07-0ubuntu0.{release}.1",
                  "nvidia-utils-595": f"595.91.07-0ubuntu0.{release}.1"}
        for release in ("24.04", "26.04")
    }
    assert pinned["_nvidia_reviewed_arch"] == "x86_64"


def test_the_k3s_install_keeps_its_guard_and_the_pin() -> None:
    defaults = yaml.safe_load((PLAYBOOKS / "roles/k3s/defaults/main.yml").read_text())
    assert defaults["k3s_version"] == "v1.36.4+k3s1"
    (install,) = [t for t in role_tasks("k3s") if t["name"] == "Install K3s"]
    guard = install["ansible.builtin.command"]["creates"]
    assert guard == "{{ _magicstick_prefix }}{{ k3s_binary }}"
    assert install["environment"]["INSTALL_K3S_VERSION"] == "{{ k3s_version }}"
    (download,) = [t for t in role_tasks("k3s") if "ansible.builtin.get_url" in t]
    assert "not ansible_check_mode" in download["when"]  # get_url sends a request in check mode


def test_roles_use_no_forbidden_modules() -> None:
    forbidden = re.compile(r"(apt_key|apt_repository|deb822_repository|reboot|modprobe|"
                           r"kubernetes|k8s|shell|raw|script|systemd)")
    for task in role_tasks("converge", "k3s", "nvidia_display"):
        for module in [k for k in task if "." in k or k in ("shell", "raw", "command")]:
            assert not forbidden.search(module), (task.get("name"), module)
