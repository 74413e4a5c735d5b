"""playbooks/prepare.yml, run for real by ansible-playbook against temporary host roots.

How the gate and the plan are exercised without apt: every case sets `magicstick_root` to a
temporary root (its own etc/os-release, var/lib/dpkg/status and boot/) and `magicstick_apply:
false`, which skips the three apt tasks (python3-apt check, list refresh, install): apt can only
act on the real root, and the playbook refuses magicstick_apply with another root. Everything
else runs as on a host: the gate, reading the shipped profile, the plan, and (outside check mode)
the dpkg-query and /boot verification against the temporary root. The apt tasks' options are
checked statically (test_apt_tasks_are_locked_down).

To keep the suite fast, all the refusal and verification cases run in ONE ansible-playbook run:
each case is an inventory host with its own variables and root (`-c local`, so every "host" is
this machine), and each host fails or succeeds on its own. The worker's exact invocation (`-e
@vars.json`, exit code 0) is exercised separately, in check mode.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.playbooks.conftest import PLAYBOOKS, assert_succeeded, output, run_playbook

pytestmark = [pytest.mark.real_commands, pytest.mark.slow]

HAS_DPKG_QUERY = shutil.which("dpkg-query") is not None

OS_RELEASE = {
    "26.04": 'PRETTY_NAME="Ubuntu Resolute"\nNAME="Ubuntu"\nVERSION_ID="26.04"\n'
    "VERSION_CODENAME=resolute\nID=ubuntu\nID_LIKE=debian\n",
    "24.04": 'PRETTY_NAME="Ubuntu 24.04.3 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\n'
    "VERSION_CODENAME=noble\nID=ubuntu\nID_LIKE=debian\n",
    "debian": 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nVERSION_ID="26.04"\nID=debian\n',
}
KERNEL = "7.0.0-31-generic"
GENERIC = {"linux-generic": "7.0.0-31.31"}
HWE = {"linux-generic-hwe-24.04": "7.0.0-31.31~24.04.1"}


def plan_vars(release: str = "26.04") -> dict[str, Any]:
    """What the worker passes for the shipped profile of `release`."""
    return {
        "magicstick_profile_id": f"strix-halo-ubuntu-{release}",
        "magicstick_os_version_id": release,
        "magicstick_packages": dict(GENERIC if release == "26.04" else HWE),
        "magicstick_target_kernel": KERNEL,
    }


def make_root(
    root: Path,
    os_release: str = "26.04",
    installed: dict[str, str] | None = None,
    boot: tuple[str, ...] = ("vmlinuz", "initrd.img"),
) -> Path:
    """A host root: etc/os-release, a dpkg status with `installed`, the target kernel in boot/."""
    (root / "etc").mkdir(parents=True)
    (root / "etc/os-release").write_text(OS_RELEASE[os_release])
    (root / "var/lib/dpkg").mkdir(parents=True)
    stanzas = [
        f"Package: {name}\nStatus: install ok installed\nPriority: optional\nSection: kernel\n"
        f"Architecture: amd64\nVersion: {version}\nMaintainer: Ubuntu\nDescription: x\n"
        for name, version in (installed or {}).items()
    ]
    (root / "var/lib/dpkg/status").write_text("\n".join(stanzas))
    (root / "boot").mkdir()
    for name in boot:
        (root / f"boot/{name}-{KERNEL}").write_text("")
    return root


# --- per-host results of a multi-host run ---------------------------------------------------------

_RECAP_LINE = re.compile(r"^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$", re.MULTILINE)
_TASK = re.compile(r"^TASK \[(?:\w+ : )?(.*)\] \**$")
_FATAL = re.compile(r"^fatal: \[([^\]]+)\]: FAILED! => (\{.*\})$")


@dataclass
class HostResult:
    counts: dict[str, int]
    failed_task: str | None  # the last task that failed on this host
    message: str | None  # and its msg


def per_host(proc: subprocess.CompletedProcess[str]) -> dict[str, HostResult]:
    counts = {
        host: {k: int(v) for k, v in (pair.split("=") for pair in pairs.split())}
        for host, pairs in _RECAP_LINE.findall(proc.stdout)
    }
    failures: dict[str, tuple[str, str]] = {}
    task = "?"
    for line in proc.stdout.splitlines():
        if m := _TASK.match(line):
            task = m.group(1)
        elif m := _FATAL.match(line):
            failures[m.group(1)] = (task, str(json.loads(m.group(2)).get("msg")))
    return {host: HostResult(c, *failures.get(host, (None, None))) for host, c in counts.items()}


def run_cases(
    playbook: str, base: Path, cases: dict[str, tuple[dict[str, Any], Path]]
) -> subprocess.CompletedProcess[str]:
    """One run, one inventory host per case: name -> (variables, host root)."""
    hosts = {
        name: {"ansible_connection": "local", **variables, "magicstick_root": str(root)}
        for name, (variables, root) in cases.items()
    }
    inventory = base / "cases.json"
    inventory.write_text(json.dumps({"all": {"hosts": hosts}}))
    return run_playbook(
        playbook,
        {},
        extra_args=["-i", str(inventory), "--limit", "all:!localhost", "--forks", "25"],
    )


# --- static ---------------------------------------------------------------------------------------


def test_syntax_check() -> None:
    proc = run_playbook("prepare.yml", {}, extra_args=["--syntax-check"])
    assert proc.returncode == 0, output(proc)


def role_tasks(role: str) -> list[dict[str, Any]]:
    """Every task of a role, blocks flattened."""
    found: list[dict[str, Any]] = []

    def walk(tasks: list[dict[str, Any]]) -> None:
        for task in tasks:
            found.append(task)
            for key in ("block", "rescue", "always"):
                walk(task.get(key, []))

    for path in sorted((PLAYBOOKS / "roles" / role).rglob("*.yml")):
        if path.parent.name in ("tasks", "handlers"):
            walk(yaml.safe_load(path.read_text()) or [])
    return found


def test_apt_tasks_are_locked_down() -> None:
    apt = [t for t in role_tasks("prepare") if "ansible.builtin.apt" in t]
    assert [t["name"] for t in apt] == [
        "Refresh the package lists when they are older than an hour",
        "Install the approved kernel packages",
    ]
    refresh, install = (t["ansible.builtin.apt"] for t in apt)
    assert set(refresh) == {
        "update_cache",
        "cache_valid_time",
        "lock_timeout",
        "auto_install_module_deps",
    }
    assert refresh["update_cache"] is True
    assert install["name"] == "{{ _magicstick_apt_names }}"
    assert install["state"] == "present"
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
    assert "lock_timeout" in install
    # only when applying, i.e. never against a temporary root
    for task in apt:
        assert "magicstick_apply" in task["when"]


@pytest.mark.parametrize("role", ["prepare", "memory"])
def test_roles_use_no_forbidden_modules(role: str) -> None:
    forbidden = re.compile(
        r"(apt_key|apt_repository|deb822_repository|reboot|modprobe|kubernetes|k8s|shell|raw"
        r"|script|systemd)"
    )
    for task in role_tasks(role):
        modules = [k for k in task if "." in k or k in ("shell", "raw", "command")]
        for module in modules:
            assert not forbidden.search(module), (task.get("name"), module)


# --- the gate and the verification: one run, one host per case ------------------------------------

# name -> (variables on top of plan_vars(release), release of the plan, root: os-release key,
#          installed packages), then the expected (failed task, message fragment) or None for ok.
Case = tuple[dict[str, Any], str, str, dict[str, str] | None, tuple[str, str] | None]
GATE = "Refuse"
CASES: dict[str, Case] = {
    # the refusals (gate)
    "wrong-pairing": (
        {"magicstick_profile_id": "strix-halo-ubuntu-24.04"},
        "26.04",
        "26.04",
        GENERIC,
        (
            "Refuse a profile that does not belong to the planned Ubuntu release",
            "profile strix-halo-ubuntu-24.04 does not pair with Ubuntu 26.04",
        ),
    ),
    "unknown-release": (
        {"magicstick_profile_id": "strix-halo-ubuntu-22.04", "magicstick_os_version_id": "22.04"},
        "26.04",
        "26.04",
        GENERIC,
        (
            "Refuse a profile that does not belong to the planned Ubuntu release",
            "does not pair with Ubuntu 22.04",
        ),
    ),
    "os-release-mismatch": (
        {},
        "26.04",
        "24.04",
        GENERIC,
        (
            "Refuse a host that does not run the planned Ubuntu release",
            "this host runs ID=ubuntu VERSION_ID=24.04 (/etc/os-release), not the Ubuntu 26.04",
        ),
    ),
    "not-ubuntu": (
        {},
        "26.04",
        "debian",
        GENERIC,
        ("Refuse a host that does not run the planned Ubuntu release", "ID=debian"),
    ),
    "hwe-on-26.04": (
        {"magicstick_packages": HWE},
        "26.04",
        "26.04",
        GENERIC,
        (
            "Refuse a kernel package of the other Ubuntu release",
            "linux-generic-hwe-24.04 is approved only on Ubuntu 24.04, and this host runs "
            "Ubuntu 26.04",
        ),
    ),
    "generic-on-24.04": (
        {"magicstick_packages": GENERIC},
        "24.04",
        "24.04",
        HWE,
        (
            "Refuse a kernel package of the other Ubuntu release",
            "linux-generic is approved only on Ubuntu 26.04, and this host runs Ubuntu 24.04",
        ),
    ),
    "extra-package": (
        {"magicstick_packages": {**GENERIC, "nvidia-driver-580": "580.95.05-0ubuntu1"}},
        "26.04",
        "26.04",
        GENERIC,
        ("Refuse any other package", "not an approved package: nvidia-driver-580."),
    ),
    "empty": (
        {"magicstick_packages": {}},
        "26.04",
        "26.04",
        GENERIC,
        ("Refuse an empty package list", "no packages to install"),
    ),
    "shell-in-version": (
        {"magicstick_packages": {"linux-generic": "7.0.0-31.31 ; rm -rf /"}},
        "26.04",
        "26.04",
        GENERIC,
        (
            "Refuse anything but exact version strings",
            'linux-generic="7.0.0-31.31 ; rm -rf /"',
        ),
    ),
    "wildcard": (
        {"magicstick_packages": {"linux-generic": "*"}},
        "26.04",
        "26.04",
        GENERIC,
        ("Refuse anything but exact version strings", 'linux-generic="*"'),
    ),
    "glob-in-version": (
        {"magicstick_packages": {"linux-generic": "7.0.0-31.*"}},
        "26.04",
        "26.04",
        GENERIC,
        ("Refuse anything but exact version strings", 'linux-generic="7.0.0-31.*"'),
    ),
    "latest": (
        {"magicstick_packages": {"linux-generic": "latest"}},
        "26.04",
        "26.04",
        GENERIC,
        ("Refuse anything but exact version strings", 'linux-generic="latest"'),
    ),
    "trailing-newline": (
        {"magicstick_packages": {"linux-generic": "7.0.0-31.31\n"}},
        "26.04",
        "26.04",
        GENERIC,
        ("Refuse anything but exact version strings", 'linux-generic="7.0.0-31.31\\n"'),
    ),
    "number-version": (
        {"magicstick_packages": {"linux-generic": 7.0}},
        "26.04",
        "26.04",
        GENERIC,
        ("Refuse anything but exact version strings", 'linux-generic="7.0"'),
    ),
    "not-the-profile-version": (
        {"magicstick_packages": {"linux-generic": "7.0.0-32.32"}},
        "26.04",
        "26.04",
        GENERIC,
        (
            "Refuse a plan that differs from the shipped profile",
            "the plan (linux-generic=7.0.0-32.32, target kernel 7.0.0-31-generic) is not what "
            "profile strix-halo-ubuntu-26.04 version 1 pins (linux-generic=7.0.0-31.31, "
            "target kernel 7.0.0-31-generic)",
        ),
    ),
    "not-the-profile-kernel": (
        {"magicstick_target_kernel": "7.0.0-32-generic"},
        "26.04",
        "26.04",
        GENERIC,
        ("Refuse a plan that differs from the shipped profile", "target kernel 7.0.0-32-generic"),
    ),
    "bad-variables": (
        {"magicstick_packages": ["linux-generic=7.0.0-31.31"]},
        "26.04",
        "26.04",
        GENERIC,
        ("Check the worker's variables", "magicstick_packages a map of package name"),
    ),
    "apply-on-a-temporary-root": (
        {"magicstick_apply": True},
        "26.04",
        "26.04",
        GENERIC,
        ("Refuse to run apt with another root", 'magicstick_apply needs magicstick_root "/"'),
    ),
    # past the gate: the verification against the temporary root's dpkg database and /boot
    "installed-26.04": ({}, "26.04", "26.04", GENERIC, None),
    "installed-24.04": ({}, "24.04", "24.04", HWE, None),
    "older-version-installed": (
        {},
        "26.04",
        "26.04",
        {"linux-generic": "7.0.0-28.28"},
        (
            "Check that every package is installed at exactly the approved version",
            "not installed at the approved version: linux-generic=7.0.0-31.31; dpkg-query "
            "reports: linux-generic|install ok installed|7.0.0-28.28",
        ),
    ),
    "not-installed": (
        {},
        "26.04",
        "26.04",
        {},
        (
            "Check that every package is installed at exactly the approved version",
            "not installed at the approved version: linux-generic=7.0.0-31.31",
        ),
    ),
}
NO_INITRD = "no-initrd"
VERIFY_CASES = {
    "installed-26.04",
    "installed-24.04",
    "older-version-installed",
    "not-installed",
    NO_INITRD,
}


@pytest.fixture(scope="module")
def cases_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], dict[str, HostResult]]:
    base = tmp_path_factory.mktemp("prepare-cases")
    cases: dict[str, tuple[dict[str, Any], Path]] = {}
    for name, (overrides, release, os_release, installed, _) in CASES.items():
        variables = {**plan_vars(release), "magicstick_apply": False, **overrides}
        cases[name] = (variables, make_root(base / name, os_release, installed))
    cases[NO_INITRD] = (
        {**plan_vars("26.04"), "magicstick_apply": False},
        make_root(base / NO_INITRD, "26.04", GENERIC, boot=("vmlinuz",)),
    )
    proc = run_cases("prepare.yml", base, cases)
    return proc, per_host(proc)


def check_case(
    run: tuple[subprocess.CompletedProcess[str], dict[str, HostResult]],
    name: str,
    expected: tuple[str, str] | None,
) -> None:
    proc, results = run
    assert name in results, output(proc)
    result = results[name]
    if expected is None:
        assert result.counts["failed"] == 0, (result, output(proc))
        assert result.failed_task is None
        return
    task, fragment = expected
    assert proc.returncode != 0
    assert result.counts["failed"] == 1, (result, output(proc))
    assert result.failed_task == task, (result, output(proc))
    assert result.message is not None and fragment in result.message, result.message
    if task.startswith(GATE) or task.startswith("Check the worker"):
        assert result.counts["changed"] == 0


@pytest.mark.parametrize("name", [n for n in CASES if n not in VERIFY_CASES])
def test_gate_refuses(cases_run: Any, name: str) -> None:
    check_case(cases_run, name, CASES[name][4])


@pytest.mark.skipif(not HAS_DPKG_QUERY, reason="needs dpkg-query (Debian/Ubuntu)")
@pytest.mark.parametrize("name", sorted(VERIFY_CASES - {NO_INITRD}))
def test_verification_reads_dpkg(cases_run: Any, name: str) -> None:
    check_case(cases_run, name, CASES[name][4])


@pytest.mark.skipif(not HAS_DPKG_QUERY, reason="needs dpkg-query (Debian/Ubuntu)")
def test_verification_needs_the_target_kernel_in_boot(cases_run: Any) -> None:
    check_case(
        cases_run,
        NO_INITRD,
        (
            "Check that the target kernel and its initramfs are in /boot",
            "the packages are installed but /boot/initrd.img-7.0.0-31-generic is missing",
        ),
    )


# --- the worker's invocation, in check mode -------------------------------------------------------


def test_check_mode_on_a_temporary_root_as_the_worker_runs_it(tmp_path: Path) -> None:
    root = make_root(tmp_path / "root", "26.04", installed={})
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    vars_file = tmp_path / "vars.json"
    vars_file.write_text(
        json.dumps({**plan_vars("26.04"), "magicstick_root": str(root), "magicstick_apply": False})
    )
    vars_file.chmod(0o600)
    proc = run_playbook("prepare.yml", {}, check=True, extra_args=["-e", f"@{vars_file}"])
    counts = assert_succeeded(proc)
    assert counts["changed"] == 0
    assert (
        "apt-get install --no-remove --no-install-recommends linux-generic=7.0.0-31.31 "
        "(target kernel 7.0.0-31-generic; magicstick_apply is false: apt is skipped, check mode)"
    ) in proc.stdout
    # the verification is skipped in check mode (nothing was installed): dpkg is empty here
    assert "not installed at the approved version" not in proc.stdout
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before
