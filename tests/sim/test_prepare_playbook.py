"""The prepare playbook on simulated hosts: packages, /boot, reboot-required, faults."""

from __future__ import annotations

from pathlib import Path

import pytest

from magicstick_host.sim.boot import boot_host
from magicstick_host.sim.faults import SimulatedCrash
from magicstick_host.sim.writer import load_host
from tests.sim.effects_helpers import (
    PREPARE_24,
    PREPARE_26,
    TARGET,
    add_fault,
    effects,
    gfx_targets,
    make,
    packages,
    playbook,
)
from tests.sim.helpers import read

OLD_26 = "strix-halo-ubuntu-26.04-old-kernel"


def test_installs_the_pinned_kernel_on_26_04(tmp_path: Path) -> None:
    root = make(OLD_26, tmp_path)
    log = tmp_path / "op.log"
    log.write_text("earlier output\n")
    result = playbook(root, "prepare.yml", PREPARE_26, log=log)
    assert result.returncode == 0 and result.stdout == ""
    text = log.read_text()
    assert text.startswith("earlier output\n")  # appended
    assert "TASK [Install the approved kernel packages] ***" in text
    assert "changed: [localhost]" in text
    assert "PLAY RECAP ***" in text and "failed=0" in text
    pkgs = packages(root)
    for name in ("linux-generic", "linux-image-generic", "linux-headers-generic",
                 f"linux-image-{TARGET}", f"linux-modules-{TARGET}", f"linux-headers-{TARGET}",
                 "linux-headers-7.0.0-31"):
        assert pkgs[name] == ("7.0.0-31.31", "install ok installed"), name
    assert pkgs["linux-image-6.17.0-8-generic"] == ("6.17.0-8.8", "install ok installed")
    assert (root / f"boot/vmlinuz-{TARGET}").is_file()
    assert (root / f"boot/initrd.img-{TARGET}").is_file()
    assert (root / "run/reboot-required").is_file()
    assert f"linux-image-{TARGET}\n" in read(root, "run/reboot-required.pkgs")
    assert read(root, "proc/sys/kernel/osrelease") == "6.17.0-8-generic\n"  # until the boot
    assert load_host(root).kernel_signatures[TARGET] == "Ubuntu 7.0.0-31.31-generic 7.0.4"
    (run,) = effects(root, "playbook")
    assert run["playbook"] == "prepare.yml" and run["rc"] == 0
    assert run["argv"][0] == "ansible-playbook"


def test_boot_runs_the_installed_kernel(tmp_path: Path) -> None:
    root = make(OLD_26, tmp_path)
    assert playbook(root, "prepare.yml", PREPARE_26).returncode == 0
    boot_host(root)
    assert read(root, "proc/sys/kernel/osrelease") == TARGET + "\n"
    assert read(root, "proc/version_signature") == "Ubuntu 7.0.0-31.31-generic 7.0.4\n"
    assert f"BOOT_IMAGE=/boot/vmlinuz-{TARGET} " in read(root, "proc/cmdline")
    assert not (root / "run/reboot-required").exists()
    assert 110501 in gfx_targets(root) and (root / "dev/kfd").exists()


def test_hwe_kernel_on_24_04(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-24.04-hwe-6.17", tmp_path)
    result = playbook(root, "prepare.yml", PREPARE_24)
    assert result.returncode == 0, result.stdout
    pkgs = packages(root)
    assert pkgs["linux-generic-hwe-24.04"][0] == "7.0.0-31.31~24.04.1"
    assert pkgs[f"linux-image-{TARGET}"][0] == "7.0.0-31.31~24.04.1"
    boot_host(root)
    assert read(root, "proc/version_signature") == "Ubuntu 7.0.0-31.31~24.04.1-generic 7.0.4\n"


def test_second_run_changes_nothing(tmp_path: Path) -> None:
    root = make(OLD_26, tmp_path)
    playbook(root, "prepare.yml", PREPARE_26)
    before = read(root, "var/lib/dpkg/status")
    again = playbook(root, "prepare.yml", PREPARE_26)
    assert again.returncode == 0 and "changed=0" in again.stdout
    assert read(root, "var/lib/dpkg/status") == before
    assert len(effects(root, "playbook")) == 2


def test_ready_host_needs_no_reboot(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-ready", tmp_path)
    result = playbook(root, "prepare.yml", PREPARE_26)
    assert result.returncode == 0 and "changed=0" in result.stdout
    assert not (root / "run/reboot-required").exists()


@pytest.mark.parametrize(("scenario", "pins", "os_id", "text"), [
    (OLD_26, {"linux-generic-hwe-24.04": "7.0.0-31.31~24.04.1"}, "26.04", "only on Ubuntu 24.04"),
    ("strix-halo-ubuntu-24.04-hwe-6.17", {"linux-generic": "7.0.0-31.31"}, "24.04",
     "only on Ubuntu 26.04"),
    (OLD_26, {"linux-generic": "7.0.0-31.*"}, "26.04", "not an exact version"),
    (OLD_26, {"linux-generic": "latest"}, "26.04", "not an exact version"),
    (OLD_26, {"linux-generic": "7.0.0-31.31"}, "24.04", "the profile is for Ubuntu 24.04"),
])
def test_package_gate(tmp_path: Path, scenario: str, pins: dict[str, str], os_id: str,
                      text: str) -> None:
    root = make(scenario, tmp_path)
    before = read(root, "var/lib/dpkg/status")
    result = playbook(root, "prepare.yml", {**PREPARE_26, "magicstick_os_version_id": os_id,
                                            "magicstick_packages": pins})
    assert result.returncode == 2
    assert "TASK [Check the package gate]" in result.stdout and text in result.stdout
    assert "fatal: [localhost]: FAILED!" in result.stdout
    assert read(root, "var/lib/dpkg/status") == before


def test_no_downgrade(tmp_path: Path) -> None:
    root = make("strix-halo-ubuntu-26.04-ready", tmp_path)
    result = playbook(root, "prepare.yml", {**PREPARE_26, "magicstick_packages": {
        "linux-generic": "6.17.0-8.8"}, "magicstick_target_kernel": "6.17.0-8-generic"})
    assert result.returncode == 2 and "--allow-downgrades" in result.stdout
    assert packages(root)["linux-generic"][0] == "7.0.0-31.31"


def test_a_pin_for_another_kernel_fails_the_boot_check(tmp_path: Path) -> None:
    root = make(OLD_26, tmp_path)
    result = playbook(root, "prepare.yml",
                      {**PREPARE_26, "magicstick_target_kernel": "7.0.0-32-generic"})
    assert result.returncode == 2
    assert "TASK [Check that the target kernel is in /boot]" in result.stdout


def test_apt_fails_is_one_shot(tmp_path: Path) -> None:
    root = make(OLD_26, tmp_path)
    add_fault(root, "apt-fails")
    before = read(root, "var/lib/dpkg/status")
    result = playbook(root, "prepare.yml", PREPARE_26)
    assert result.returncode == 2
    _, fatal = result.stdout.split("TASK [Install the approved kernel packages]", 1)
    assert fatal.splitlines()[1].startswith("fatal: [localhost]: FAILED! => {")
    assert '"msg": "E: Sub-process /usr/bin/dpkg returned an error code (1)"' in fatal
    assert read(root, "var/lib/dpkg/status") == before
    assert not (root / f"boot/vmlinuz-{TARGET}").exists()
    assert not (root / "run/reboot-required").exists()
    assert load_host(root).faults == []
    assert [e["fault"] for e in effects(root, "fault")] == ["apt-fails"]
    assert effects(root, "playbook")[0]["rc"] == 2
    assert playbook(root, "prepare.yml", PREPARE_26).returncode == 0  # the retry works


def test_package_unavailable(tmp_path: Path) -> None:
    root = make(OLD_26, tmp_path)
    add_fault(root, "package-unavailable")
    result = playbook(root, "prepare.yml", PREPARE_26)
    assert result.returncode == 2
    assert "E: Version '7.0.0-31.31' for 'linux-generic' was not found" in result.stdout
    assert packages(root)["linux-generic"][0] == "6.17.0-8.8"


def test_apt_crash_halfway(tmp_path: Path) -> None:
    root = make(OLD_26, tmp_path)
    add_fault(root, "apt-crash-halfway")
    log = tmp_path / "op.log"
    with pytest.raises(SimulatedCrash):
        playbook(root, "prepare.yml", PREPARE_26, log=log)
    assert "TASK [Install the approved kernel packages]" in log.read_text()
    assert "PLAY RECAP" not in log.read_text()
    pkgs = packages(root)
    assert pkgs[f"linux-image-{TARGET}"] == ("7.0.0-31.31", "install ok installed")
    assert pkgs["linux-generic"] == ("6.17.0-8.8", "install ok half-configured")
    assert (root / f"boot/vmlinuz-{TARGET}").is_file()
    assert (root / f"boot/initrd.img-{TARGET}").is_file()
    (run,) = effects(root, "playbook")
    assert run["crashed"] is True and run["rc"] is None
    assert load_host(root).faults == []
    assert playbook(root, "prepare.yml", PREPARE_26).returncode == 0
    assert packages(root)["linux-generic"] == ("7.0.0-31.31", "install ok installed")


def test_crash_is_not_an_exception(tmp_path: Path) -> None:
    root = make(OLD_26, tmp_path)
    add_fault(root, "apt-crash-halfway")
    with pytest.raises(BaseException) as info:
        try:
            playbook(root, "prepare.yml", PREPARE_26)
        except Exception:  # what product code may do: it must not catch the crash
            pytest.fail("SimulatedCrash was caught as an Exception")
    assert isinstance(info.value, SimulatedCrash)


def test_unusable_calls(tmp_path: Path) -> None:
    from magicstick_host.sim.runner import SimRunner

    root = make(OLD_26, tmp_path)
    runner = SimRunner(root)
    assert runner.run(["ansible-playbook", "site.yml"], timeout=5).returncode == 1
    missing = runner.run(["ansible-playbook", "x/prepare.yml", "-e", "@/nonexistent.json"],
                         timeout=5)
    assert missing.returncode == 1 and "Unable to load extra vars" in missing.stdout
    undefined = playbook(root, "prepare.yml", {"magicstick_packages": {}})
    assert undefined.returncode == 2 and "is undefined" in undefined.stdout
    assert packages(root)["linux-generic"][0] == "6.17.0-8.8"
