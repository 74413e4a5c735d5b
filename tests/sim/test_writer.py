"""create_host errors, boot IDs, and the load/edit/write round trip effects will use."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from magicstick_host.errors import BadInputError
from magicstick_host.sim.builders import ubuntu_kernel_signature
from magicstick_host.sim.codec import host_from_dict, host_to_dict
from magicstick_host.sim.model import Package, boot_id_namespace, default_boot_id
from magicstick_host.sim.scenarios import SCENARIOS
from magicstick_host.sim.writer import build_host, create_host, load_host, write_host
from tests.sim.helpers import PCI, STRIX, read, snapshot

READY = "strix-halo-ubuntu-26.04-ready"


def test_unknown_scenario_lists_the_valid_names(tmp_path: Path) -> None:
    with pytest.raises(BadInputError) as exc:
        create_host("no-such-host", tmp_path / "x")
    assert "no-such-host" in exc.value.message
    for name in SCENARIOS:
        assert name in exc.value.message
    assert not (tmp_path / "x").exists()


def test_non_empty_or_non_directory_target_is_refused(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep").write_text("x")
    with pytest.raises(BadInputError, match="not empty"):
        create_host(READY, tmp_path / "full")
    (tmp_path / "file").write_text("x")
    with pytest.raises(BadInputError, match="not a directory"):
        create_host(READY, tmp_path / "file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "full"]


def test_empty_existing_directory_and_missing_parents(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    create_host(READY, tmp_path / "empty")
    assert (tmp_path / "empty/proc/meminfo").is_file()
    create_host(READY, tmp_path / "a" / "b" / "c")
    assert (tmp_path / "a/b/c/.magicstick-sim/host.json").is_file()


def test_boot_ids(tmp_path: Path) -> None:
    assert default_boot_id(READY) == str(uuid.uuid5(boot_id_namespace(), READY))
    assert default_boot_id(READY, 1) != default_boot_id(READY)
    create_host(READY, tmp_path / "a")
    assert read(tmp_path / "a", "proc/sys/kernel/random/boot_id") == default_boot_id(READY) + "\n"
    given = "0F8FAD5B-D9CB-469F-A165-70867728950E"
    create_host(READY, tmp_path / "b", boot_id=given)
    assert read(tmp_path / "b", "proc/sys/kernel/random/boot_id") == given.lower() + "\n"
    with pytest.raises(BadInputError, match="not a UUID"):
        create_host(READY, tmp_path / "c", boot_id="not-a-uuid")
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_model_round_trips(name: str, tmp_path: Path) -> None:
    host = build_host(name)
    assert host_from_dict(host_to_dict(host)) == host
    write_host(host, tmp_path)
    assert load_host(tmp_path) == host


def test_load_takes_back_tree_changes(tmp_path: Path) -> None:
    create_host(READY, tmp_path / "h")
    root = tmp_path / "h"
    (root / PCI / STRIX / "uma/carveout").write_text("7\n")
    managed = "options ttm pages_limit=25165824 page_pool_size=25165824\n"
    (root / "etc/modprobe.d/90-magicstick-ttm.conf").write_text(managed)
    host = load_host(root)
    gpu = host.device(STRIX)
    assert gpu is not None and gpu.uma is not None and gpu.uma.selected == 7
    assert host.modprobe_files["etc/modprobe.d/90-magicstick-ttm.conf"] == managed
    assert "usr/lib/modprobe.d/systemd.conf" in host.modprobe_files


def test_effects_edit_the_model_and_rewrite_in_place(tmp_path: Path) -> None:
    """What the later simulator effects do: kernel install, then a reboot into it."""
    create_host("strix-halo-ubuntu-26.04-old-kernel", tmp_path / "h")
    root = tmp_path / "h"
    (root / "var/lib/magicstick-host").mkdir(parents=True)
    (root / "var/lib/magicstick-host/state.json").write_text("{}")  # the worker's own file
    host = load_host(root)
    host.boot_kernels.append("7.0.0-31-generic")
    signature = ubuntu_kernel_signature("26.04", "7.0.0-31-generic")
    assert signature is not None
    host.kernel_signatures["7.0.0-31-generic"] = signature
    host.packages.append(Package("linux-image-7.0.0-31-generic", "7.0.0-31.31", "kernel"))
    host.reboot_required_pkgs = ["linux-image-7.0.0-31-generic"]
    write_host(host, root)
    assert (root / "boot/vmlinuz-7.0.0-31-generic").is_file()
    assert (root / "boot/vmlinuz.old").readlink() == Path("vmlinuz-6.17.0-8-generic")
    assert (root / "run/reboot-required").is_file()
    assert "linux-image-7.0.0-31-generic" in read(root, "var/lib/dpkg/status")
    # reboot
    host = load_host(root)
    host.boot_count += 1
    host.boot_id = default_boot_id(host.scenario, host.boot_count)
    newest = host.newest_boot_kernel()
    assert newest == "7.0.0-31-generic"
    host.boot_into(newest)
    host.reboot_required_pkgs = None
    host.dev_kfd = False
    host.kfd_nodes = []
    write_host(host, root)
    assert read(root, "proc/sys/kernel/osrelease") == "7.0.0-31-generic\n"
    assert read(root, "proc/version_signature") == "Ubuntu 7.0.0-31.31-generic 7.0.4\n"
    assert read(root, "proc/sys/kernel/random/boot_id") == default_boot_id(host.scenario, 1) + "\n"
    assert not (root / "run/reboot-required").exists()
    assert not (root / "dev/kfd").exists()
    assert not (root / "sys/class/kfd/kfd/topology/nodes/1/properties").exists()
    assert read(root, "var/lib/magicstick-host/state.json") == "{}"
    # a fresh render of the same model gives the same tree (stale paths all removed)
    write_host(host, tmp_path / "fresh")
    fresh = snapshot(tmp_path / "fresh")
    current = {k: v for k, v in snapshot(root).items() if v[0] != "dir"}
    assert {k: v for k, v in fresh.items() if v[0] != "dir"} == {
        k: v for k, v in current.items() if not k.startswith("var/lib/magicstick-host")
    }


def test_load_host_rejects_a_non_host(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="not a simulated host"):
        load_host(tmp_path)
    with pytest.raises(BadInputError, match="missing scenario"):
        host_from_dict({})
