"""Corrupt random files of a simulated host: inspect never crashes, and broken evidence never
plans `available`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.inspect.conftest import inspect_valid

BASE = "strix-halo-ubuntu-26.04-old-kernel"  # plans `available` when intact
# evidence an `available` plan depends on: an unknown here must never lead to it (the driver's
# KFD state is not among them: an unsuitable kernel gets the upgrade whatever the driver shows)
CRITICAL = ("os", "arch", "kernel", "boot_id", "pci", "packages")


def is_critical(field: str) -> bool:
    # memory sizes of a GPU matter to gpuMemory, not to which kernel package is installed
    if field.endswith(("vram_total_bytes", "gtt_total_bytes")) or ".uma" in field:
        return False
    return field.split(".")[0] in CRITICAL


def host_files(root: Path) -> list[str]:
    files = []
    for dirpath, _dirs, names in os.walk(root):
        if ".magicstick-sim" in dirpath:
            continue
        for name in names:
            path = Path(dirpath) / name
            if not path.is_symlink():
                files.append(str(path.relative_to(root)))
    return sorted(files)


CORRUPTIONS = st.sampled_from(["garbage", "binary", "empty", "truncate", "directory", "delete"])


def corrupt(path: Path, how: str, data: bytes) -> None:
    if how == "garbage":
        path.write_bytes(data.replace(b"\0", b"x") or b"??")
    elif how == "binary":
        path.write_bytes(b"\xff\xfe\0" + data)
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "truncate":
        content = path.read_bytes()
        path.write_bytes(content[: len(content) // 2])
    elif how == "directory":
        path.unlink()
        path.mkdir()
    else:
        path.unlink()


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_corrupted_hosts_never_crash_and_never_plan_available_from_broken_evidence(
    data: st.DataObject, sim_roots: dict[str, Path], tmp_path_factory: object
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "host"
        shutil.copytree(sim_roots[BASE], root, symlinks=True)
        baseline = inspect_valid(root)["plan"]
        files = host_files(root)
        victims = data.draw(st.lists(st.sampled_from(files), min_size=1, max_size=3, unique=True))
        for victim in victims:
            corrupt(root / victim, data.draw(CORRUPTIONS), data.draw(st.binary(max_size=64)))
        doc = inspect_valid(root)  # never raises, always schema-valid
        plan = doc["plan"]
        critical = [u for u in doc["unknowns"] if is_critical(u["field"])]
        if critical:
            assert plan["state"] != "available", (victims, critical)
        if plan["state"] == "available":
            # still available: only the exact reviewed pin, never something new
            assert plan["packages"] == baseline["packages"], victims
            assert plan["targetKernel"] == baseline["targetKernel"]
