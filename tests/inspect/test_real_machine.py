"""inspect on the real machine this suite runs on (read-only, no Kubernetes needed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from magicstick_host import schemas
from magicstick_host.ports.runner import NOT_FOUND
from tests.harness.command import magicstick_command
from tests.inspect.conftest import inspect_valid


@pytest.mark.real_commands  # the network evidence: `ip -j`, `netplan get` (read-only)
def test_inspect_of_this_machine_is_schema_valid_and_never_acts_on_missing_hardware() -> None:
    doc = inspect_valid(Path("/"))
    if "1002:1586" not in doc["plan"]["displayGpus"]:
        assert doc["plan"]["state"] in ("not-required", "blocked")
        assert doc["plan"]["packages"] == {}
    assert doc["evidence"]["bootId"] == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert doc["evidence"]["kernel"]["release"] == os.uname().release


@pytest.mark.real_commands
def test_the_installed_command_prints_valid_json_with_exit_0() -> None:
    exe = Path(magicstick_command())
    proc = subprocess.run([str(exe), "inspect", "--json"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert schemas.errors("inspect", json.loads(proc.stdout)) == []


@pytest.mark.real_commands
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root to drop to an unprivileged user")
def test_inspect_runs_unprivileged_and_unreadable_files_are_unknown(tmp_path: Path) -> None:
    from magicstick_host.sim.writer import create_host

    root = tmp_path / "host"
    create_host("strix-halo-ubuntu-26.04-ready", root)
    secret = root / "var/lib/dpkg/status"
    secret.chmod(0o600)  # root-only, like a file an unprivileged inspect may not read
    for parent in [tmp_path, *tmp_path.parents]:
        parent.chmod(parent.stat().st_mode | 0o005)
    exe = Path(magicstick_command())
    proc = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
         str(exe), "inspect", "--json", "--root", str(root)],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert schemas.errors("inspect", doc) == []
    reasons = [u["reason"] for u in doc["unknowns"]]
    assert any("/var/lib/dpkg/status: permission denied" in r for r in reasons), reasons
    assert doc["plan"]["state"] == "blocked"


# the worker's machinery that inspect does not run (issue 26): the tick and its result, the
# operations (the report's actions come from operations/offer_rules.py, not the registry),
# intake, the state and its records, Kubernetes, publishing, effects, network trials
MACHINERY = ("magicstick_host.tick", "magicstick_host.tick_result", "magicstick_host.publish",
             "magicstick_host.cluster_reads", "magicstick_host.converge",
             "magicstick_host.domain.operations.registry", "magicstick_host.domain.operations.kind",
             "magicstick_host.domain.operations.decide", "magicstick_host.domain.request",
             "magicstick_host.domain.intake", "magicstick_host.domain.state",
             "magicstick_host.domain.log_lines", "magicstick_host.domain.decisions",
             "magicstick_host.ports.kube", "magicstick_host.ports.state_store",
             "magicstick_host.effects", "magicstick_host.network")


# what the console's inspect of this machine must not pay for (issue 15): it makes no TLS
# connection, reads no YAML and no network address, validates no shipped data, imports no
# command by name, and its paths are strings (typing, hashlib and hmac it may: issue 26)
INSPECT_NEVER_LOADS = ("pathlib", "urllib", "ssl", "yaml",
                       "ipaddress", "importlib", "kubernetes", "jsonschema",
                       "click", "dataclasses", "magicstick_host.sim", *MACHINERY)
INSPECT_PROBE = """
import io, json, sys
before = set(sys.modules)
sys.path.insert(0, sys.argv[1])
from magicstick_host.cli.main import main
sys.stdout = io.StringIO()
code = main(["inspect", "--json"])
sys.stdout = sys.__stdout__
print(json.dumps({"code": code, "modules": sorted(set(sys.modules) - before)}))
"""


@pytest.mark.real_commands
def test_inspect_of_this_machine_loads_nothing_it_does_not_use() -> None:
    # -S: no site hook, whose editable-install finder would load pathlib and hide it here
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", INSPECT_PROBE, str(repo)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    assert doc["code"] == 0
    assert "magicstick_host.collect.packages" in doc["modules"]  # it did the work
    loaded = [m for m in doc["modules"]
              if any(m == bad or m.startswith(bad + ".") for bad in INSPECT_NEVER_LOADS)]
    assert loaded == []


SIM_PROBE = """
import io, json, sys
sys.path.insert(0, sys.argv[1])
from magicstick_host.cli.main import main
sys.stdout = io.StringIO()
code = main(["inspect", "--json", "--root", sys.argv[2]])
sys.stdout = sys.__stdout__
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


@pytest.mark.real_commands  # a fresh interpreter, to see what it imports
def test_inspect_of_a_simulated_host_loads_none_of_the_workers_machinery(tmp_path: Path) -> None:
    """Neither the tick nor the operations, and not the simulator either: inspect runs no
    command, and the simulated root's runner is made at its first (app_roots.SimQueryRunner)."""
    from magicstick_host.sim.writer import create_host

    create_host("strix-halo-ubuntu-26.04-ready", tmp_path / "host")
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", SIM_PROBE, str(repo),
                           str(tmp_path / "host")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    assert doc["code"] == 0
    assert "magicstick_host.collect.packages" in doc["modules"]  # it did the work
    loaded = [m for m in doc["modules"] if any(m == bad or m.startswith(bad + ".")
                                               for bad in (*MACHINERY, "magicstick_host.sim",
                                                           "pathlib"))]
    assert loaded == []


def test_a_simulated_roots_query_runner_answers_from_the_simulated_host(tmp_path: Path) -> None:
    from magicstick_host.app import query_runner
    from magicstick_host.sim.writer import create_host

    create_host("strix-halo-ubuntu-26.04-ready", tmp_path / "host")
    runner = query_runner(str(tmp_path / "host"))
    assert runner.run(["uname", "-m"], timeout=5).stdout.strip() == "x86_64"
    assert runner.run(["no-such-tool"], timeout=5).returncode == NOT_FOUND
