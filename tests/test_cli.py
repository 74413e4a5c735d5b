"""The command line: bad input is one clear line and a non-zero exit code, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from magicstick_host import schemas
from magicstick_host.cli.main import main
from magicstick_host.errors import ExitCode
from magicstick_host.sim.writer import create_host


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_help_documents_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for exit_code in ExitCode:
        assert f"{exit_code.value:>3}  {exit_code.name.lower().replace('_', '-')}" in out


def test_tick_help_documents_every_environment_variable(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "tick", "--help")
    for var in (
        "MAGICSTICK_HOST_ROOT",
        "MAGICSTICK_HOST_STATE_DIR",
        "MAGICSTICK_HOST_KUBECONFIG",
        "MAGICSTICK_HOST_NODE_NAME",
        "MAGICSTICK_HOST_EXECUTOR",
    ):
        assert var in out


def test_inspect_json_on_a_simulated_host(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    create_host("strix-halo-ubuntu-26.04-old-kernel", tmp_path / "h")
    code, out, err = run(capsys, "inspect", "--json", "--root", str(tmp_path / "h"))
    assert code == 0, err
    doc = json.loads(out)
    assert schemas.errors("inspect", doc) == []
    assert doc["plan"]["state"] == "available"


def test_inspect_human_summary_says_the_plan_in_one_sentence(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    create_host("strix-halo-nvidia-ubuntu-26.04-old-kernel", tmp_path / "h")
    code, out, _ = run(capsys, "inspect", "--root", str(tmp_path / "h"))
    assert code == 0
    assert "Plan:     blocked:" in out and "experiment available" in out


def test_a_missing_root_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "inspect", "--root", str(tmp_path / "nope"))
    assert code == ExitCode.USAGE
    assert "does not exist" in err and "Traceback" not in err


def test_a_malformed_profile_names_the_file_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "bad.yaml").write_text("id: x\nversion: one\n")
    code, out, err = run(capsys, "inspect", "--profiles", str(profiles))
    assert code == ExitCode.BAD_INPUT
    assert out == ""
    assert err.count("\n") == 1 and "bad.yaml" in err and "profile-invalid" in err


def test_sim_create_refuses_an_unknown_scenario_and_a_non_empty_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "sim", "create", "no-such-host", str(tmp_path / "a"))
    assert code == ExitCode.BAD_INPUT and "valid scenarios" in err
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "keep").write_text("mine")
    code, _, err = run(capsys, "sim", "create", "cpu-only-ubuntu-24.04", str(tmp_path / "b"))
    assert code == ExitCode.BAD_INPUT and "not empty" in err
    assert (tmp_path / "b" / "keep").read_text() == "mine"


def test_sim_list_names_every_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    from magicstick_host.sim.scenarios import list_scenarios

    _, out, _ = run(capsys, "sim", "list")
    for name, _ in list_scenarios():
        assert name in out


def test_tick_without_a_kubeconfig_does_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, _ = run(
        capsys,
        "tick",
        "--kubeconfig",
        str(tmp_path / "none.yaml"),
        "--state-dir",
        str(tmp_path / "state"),
    )
    assert code == 0
    assert not (tmp_path / "state").exists()


def test_the_subprocess_guard_stops_real_commands() -> None:
    from tests.conftest import RealCommandForbidden

    with pytest.raises(RealCommandForbidden):
        subprocess.run(["true"], check=False)


def tick_on_sim_host(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    *,
    kubeconfig_text: str = "apiVersion: v1\nkind: Config\n",
    executor: str = "sim",
) -> tuple[int, str, str]:
    """One `tick` against a simulated ready host, state in tmp_path/state."""
    if not (tmp_path / "h").exists():
        create_host("strix-halo-ubuntu-26.04-ready", tmp_path / "h")
    kubeconfig = tmp_path / "k3s.yaml"
    kubeconfig.write_text(kubeconfig_text)
    return run(capsys, "tick", "--root", str(tmp_path / "h"), "--executor", executor,
               "--state-dir", str(tmp_path / "state"), "--kubeconfig", str(kubeconfig),
               "--node-name", "strix-01")


def test_tick_exits_busy_and_quietly_while_the_maintenance_lock_is_held(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from magicstick_host.ports.lock import MaintenanceLock
    from magicstick_host.ports.state_store import FileStateStore

    state = tmp_path / "state"
    FileStateStore(state).prepare()
    with MaintenanceLock(state / "maintenance.lock"):  # host convergence is running
        code, out, err = tick_on_sim_host(capsys, tmp_path)
    assert code == ExitCode.BUSY and out == "" and err == ""
    assert not (state / "state.json").exists()


def test_the_real_executor_refuses_a_simulated_root(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = tick_on_sim_host(capsys, tmp_path, executor="real")
    assert code == ExitCode.BAD_INPUT and "needs --root /" in err
    assert err.count("\n") == 1


def test_a_malformed_kubeconfig_is_bad_input_in_one_line_and_local_work_goes_on(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = tick_on_sim_host(capsys, tmp_path, kubeconfig_text="garbage: [\n")
    assert code == ExitCode.BAD_INPUT
    assert err.count("\n") == 1 and "cannot load kubeconfig" in err and "Traceback" not in err
    assert out == ""
    assert (tmp_path / "state").is_dir()


def test_every_console_command_is_listed_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for command in ("tick", "inspect", "status", "recover", "history", "sim", "converge"):
        assert f"  {command} " in out


def test_history_json_is_versioned_and_read_only(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "history", "--json", "--state-dir", str(tmp_path / "state"))
    assert code == 0, err
    doc = json.loads(out)
    assert schemas.errors("history", doc) == []
    assert doc["schemaVersion"] == 1 and doc["kind"] == "magicstick-host.history"
    assert not (tmp_path / "state").exists()


def test_status_takes_a_file_where_the_state_directory_should_be(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "state").write_text("")
    code, out, err = run(
        capsys, "status", "--json", "--state-dir", str(tmp_path / "state"), "--node-name", "n"
    )
    assert code == 0, err
    (condition,) = json.loads(out)["conditions"]
    assert condition["problem"] == "not-directory"
    assert f"mv -T {tmp_path / 'state'} {tmp_path / 'state'}.unsafe" in condition["advice"]


def test_only_a_bug_is_an_internal_error_in_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from magicstick_host import app

    def defect(*args: object, **kwargs: object) -> None:
        raise KeyError("a programming error")

    monkeypatch.setattr(app, "inspect_host", defect)
    code, out, err = run(capsys, "inspect", "--root", str(tmp_path))
    assert code == ExitCode.INTERNAL
    assert err.count("\n") == 1 and "internal error: KeyError" in err and out == ""


# ---- the Node name: given, valid, or the host name; never an empty one -----------------------


def bad_name(code: int, err: str, what: str) -> None:
    assert code == ExitCode.BAD_INPUT, err
    assert err.count("\n") == 1 and what in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("name", "what"),
    [
        ("", "--node-name is empty"),
        ("a" * 254, "254 characters long; a Node name has at most 253"),
        ("Not_DNS", "is not a DNS-1123 name"),
    ],
    ids=["empty", "too-long", "not-dns-1123"],
)
def test_tick_status_and_recover_refuse_a_bad_node_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, what: str
) -> None:
    create_host("strix-halo-ubuntu-26.04-ready", tmp_path / "h")
    kubeconfig = tmp_path / "k3s.yaml"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    state = str(tmp_path / "state")
    bad_name(*run(capsys, "tick", "--root", str(tmp_path / "h"), "--executor", "sim",
                  "--state-dir", state, "--kubeconfig", str(kubeconfig), "--node-name",
                  name)[::2], what)
    assert not (tmp_path / "state").exists()  # refused before anything was touched
    bad_name(*run(capsys, "status", "--state-dir", state, "--node-name", name)[::2], what)
    bad_name(*run(capsys, "recover", "--root", str(tmp_path / "h"), "--state-dir", state,
                  "--node-name", name, "--confirm", name)[::2], what)
    assert not (tmp_path / "state").exists()


def test_an_empty_node_name_variable_is_an_error_not_the_host_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAGICSTICK_HOST_NODE_NAME", "")
    create_host("strix-halo-ubuntu-26.04-ready", tmp_path / "h")
    kubeconfig = tmp_path / "k3s.yaml"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    state = str(tmp_path / "state")
    what = "MAGICSTICK_HOST_NODE_NAME is set but empty"
    bad_name(*run(capsys, "tick", "--root", str(tmp_path / "h"), "--executor", "sim",
                  "--state-dir", state, "--kubeconfig", str(kubeconfig))[::2], what)
    bad_name(*run(capsys, "status", "--state-dir", state)[::2], what)
    bad_name(*run(capsys, "recover", "--root", str(tmp_path / "h"), "--state-dir", state,
                  "--confirm", "x")[::2], what)


def test_the_longest_node_name_is_taken(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    name = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 61])
    assert len(name) == 253
    code, out, err = run(capsys, "status", "--json", "--state-dir", str(tmp_path / "s"),
                         "--node-name", name)
    assert code == 0, err
    assert json.loads(out)["node"] == name


# ---- lines for the journal -------------------------------------------------------------------


def test_in_the_journal_every_line_carries_its_level_and_at_a_console_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import sys

    from magicstick_host.cli.journal import say

    path = tmp_path / "stream"
    with open(path, "w") as stream:
        st = os.fstat(stream.fileno())
        monkeypatch.setattr(sys, "stdout", stream)
        monkeypatch.setattr(sys, "stderr", stream)
        monkeypatch.setenv("JOURNAL_STREAM", f"{st.st_dev}:{st.st_ino}")
        say("notice", "a transition")
        say("warning", "a refusal")
        say("err", "a stop\nover two lines")
        monkeypatch.setenv("JOURNAL_STREAM", "1:2")  # another stream: a person reads this
        say("warning", "at the console")
    assert path.read_text().splitlines() == [
        "<5>magicstick-host: a transition",
        "<4>magicstick-host: a refusal",
        "<3>magicstick-host: a stop over two lines",
        "magicstick-host: at the console",
    ]


def test_the_log_memory_is_best_effort(tmp_path: Path) -> None:
    from magicstick_host.ports.log_memory import FILE_NAME, LogMemory

    memory = LogMemory(tmp_path)
    assert memory.load() == {}
    memory.save({"kubernetes": "unreachable"})
    assert LogMemory(tmp_path).load() == {"kubernetes": "unreachable"}
    (tmp_path / FILE_NAME).write_text('{"a": "x", "a": "y"}')  # hostile: forgotten, not fatal
    assert memory.load() == {}
    LogMemory(tmp_path / "gone").save({"k": "v"})  # cannot be written: nothing is raised
    assert LogMemory(None).load() == {} and not LogMemory(None).enabled


def test_the_log_memory_trusts_only_what_the_worker_wrote(tmp_path: Path) -> None:
    """A planted memory (another owner, a mode others can write, a directory others can write)
    is ignored: it cannot silence a condition the ticks must log."""
    from magicstick_host.ports.log_memory import FILE_NAME, LogMemory

    LogMemory(tmp_path).save({"blocked": "state unreadable"})
    memo = tmp_path / FILE_NAME
    assert memo.stat().st_mode & 0o777 == 0o600
    assert LogMemory(tmp_path).load() == {"blocked": "state unreadable"}
    os.chown(memo, 65534, 65534)
    assert LogMemory(tmp_path).load() == {}
    os.chown(memo, 0, 0)
    memo.chmod(0o666)
    assert LogMemory(tmp_path).load() == {}
    memo.chmod(0o600)
    tmp_path.chmod(0o777)
    assert LogMemory(tmp_path).load() == {}
    LogMemory(tmp_path).save({"k": "v"})  # nor written into such a directory
    tmp_path.chmod(0o700)
    assert LogMemory(tmp_path).load() == {"blocked": "state unreadable"}
