"""The timer's ticks remember what the kubeconfig and the profiles parse to, by their bytes
(ports/command_memo.py, issue 15): a hit gives exactly what parsing gives, a changed file is
parsed again, a memo that does not fit is ignored, and a remembered profile is still checked."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from magicstick_host.errors import ProfileError
from magicstick_host.ports.command_memo import FileCommandMemo
from magicstick_host.ports.kubeconfig import load_kubeconfig
from magicstick_host.profile_store import load_profiles
from tests.domain.builders import REPO
from tests.ports.test_kube_config import CERT, KEY, b64, document, write


def k3s_document(server: str = "https://127.0.0.1:6443") -> dict[str, object]:
    return document(cluster={"server": server, "certificate-authority-data": b64("CA")},
                    user={"client-certificate-data": b64(CERT), "client-key-data": b64(KEY)})


def test_a_remembered_kubeconfig_is_what_parsing_gives(tmp_path: Path) -> None:
    path = write(tmp_path, k3s_document())
    memo = FileCommandMemo(tmp_path / "kubeconfig.json")
    parsed = load_kubeconfig(path)
    assert load_kubeconfig(path, memo) == parsed  # parses, remembers
    assert stat.S_IMODE(os.lstat(memo.path).st_mode) == 0o600  # it holds the client key
    assert load_kubeconfig(path, memo) == parsed  # from the memo

    write(tmp_path, k3s_document("https://10.0.0.2:6443"))
    assert load_kubeconfig(path, memo).host == "10.0.0.2"  # changed bytes: parsed again


def test_a_corrupt_or_foreign_memo_is_ignored(tmp_path: Path) -> None:
    path = write(tmp_path, k3s_document())
    memo = FileCommandMemo(tmp_path / "kubeconfig.json")
    load_kubeconfig(path, memo)
    held = json.loads(Path(memo.path).read_text())
    held["key"] = "kubeconfig-1:" + "0" * 64
    Path(memo.path).write_text(json.dumps(held))
    assert load_kubeconfig(path, memo).host == "127.0.0.1"
    Path(memo.path).write_text("{broken")
    assert load_kubeconfig(path, memo).host == "127.0.0.1"


def test_a_document_json_cannot_carry_is_not_remembered(tmp_path: Path) -> None:
    """YAML has dates and non-string keys; JSON would give back something else."""
    text = (Path(write(tmp_path, k3s_document())).read_text()
            + "preferences:\n  since: 2026-12-01\n  7: seven\n")
    path = tmp_path / "dated.yaml"
    path.write_text(text)
    memo = FileCommandMemo(tmp_path / "kubeconfig.json")
    assert load_kubeconfig(str(path), memo).host == "127.0.0.1"
    assert not Path(memo.path).exists()


def test_remembered_profiles_are_the_parsed_ones_and_are_still_checked(tmp_path: Path) -> None:
    shutil.copytree(REPO / "profiles", tmp_path / "profiles")
    directory = tmp_path / "profiles"
    memo = FileCommandMemo(tmp_path / "profiles.json")
    parsed = load_profiles(directory)
    assert load_profiles(directory, memo) == parsed
    assert load_profiles(directory, memo) == parsed

    # a memo whose key fits but whose document is not a valid profile: checked, refused
    held = json.loads(Path(memo.path).read_text())
    documents = json.loads(held["output"])
    documents[0]["packages"] = {"linux-image-generic": "1.0"}
    Path(memo.path).write_text(json.dumps({**held, "output": json.dumps(documents)}))
    with pytest.raises(ProfileError):
        load_profiles(directory, memo)

    # an edited file is parsed again, not answered from the memo
    target = sorted(directory.glob("*.yaml"))[0]
    target.write_text(target.read_text() + "\nunknown-field: 1\n")
    with pytest.raises(ProfileError, match="unknown-field"):
        load_profiles(directory, FileCommandMemo(tmp_path / "profiles.json"))


STATUS = """Package: linux-image-7.0.0-31-generic
Status: install ok installed
Architecture: amd64
Version: 7.0.0-31.31

Package: k3s-helper
Status: deinstall ok config-files
Version: 1.0
"""


def installed(root: Path, memo: FileCommandMemo) -> tuple[dict[str, str], list[str]]:
    from magicstick_host.collect.packages import collect_packages
    from magicstick_host.collect.reader import Reader
    from magicstick_host.ports.hostfs import RootedHostFS

    r = Reader(RootedHostFS(str(root)))
    info = collect_packages(r, ["k3s-helper"], "7.0.0-31-generic", memo)
    return info.installed, [u.reason for u in r.unknowns]


def test_the_dpkg_status_is_remembered_by_its_bytes(tmp_path: Path) -> None:
    status = tmp_path / "root" / "var/lib/dpkg/status"
    status.parent.mkdir(parents=True)
    (tmp_path / "root" / "boot").mkdir()
    status.write_text(STATUS)
    memo = FileCommandMemo(tmp_path / "dpkg-status.json")
    expected = ({"linux-image-7.0.0-31-generic": "7.0.0-31.31"}, [])
    assert installed(tmp_path / "root", memo) == expected  # parsed, remembered
    assert Path(memo.path).exists()
    assert installed(tmp_path / "root", memo) == expected  # from the memo

    status.write_text(STATUS + "Package: broken\n bad continuation\nno colon here\n")
    corrupt = installed(tmp_path / "root", memo)
    assert corrupt[0] == {} and len(corrupt[1]) == 1  # a corrupt file is unknown, not "absent"
    assert installed(tmp_path / "root", memo) == corrupt  # and stays unknown from the memo

    status.write_text(STATUS.replace("7.0.0-31.31", "7.0.0-31.32"))
    assert installed(tmp_path / "root", memo)[0] == {"linux-image-7.0.0-31-generic": "7.0.0-31.32"}
