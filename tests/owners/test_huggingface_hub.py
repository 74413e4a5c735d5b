"""The model-cache inventory and cleanup held to huggingface_hub itself (issue #25, "Done when").

The hub trees here are written by the library's own code, not by us: `hf_hub_download` against a
loopback stand-in for the Hub (the HEAD and GET of `/<repo>/resolve/<rev>/<file>` it sends, for
models and datasets), and the library's own shared-store functions
(`huggingface_hub/utils/_shared_blobs.py`): a first download is published to the store with
`publish_blob_to_shared_store`, exactly as `hf_hub_download` does after a Xet download (the
stand-in serves no Xet CAS, so the bytes travel over plain HTTP); every later download of the
same file is answered with its `X-Xet-Hash`, and the library links it from the store itself
(`try_link_from_shared_store`). Then:
- our walk against `scan_cache_dir()` and the store's own accounting: the same repositories,
  and the same store payloads reclaimable as the library's `expected_shared_blob_freed_size`;
- `reclaimableBytes` of the hub against what the library's own deletion of every model revision
  (`delete_revisions(...).execute()`, which sweeps the store) removes from a copy of the tree;
- a clear through our real tick (the test apiserver), after which `scan_cache_dir()` lists only
  the dataset, the store holds only the payloads the dataset uses, nothing is unreferenced, and
  the payload bytes freed equal the library's `expected_freed_size`;
- a payload whose lock another process holds is kept, said, and freed by a later clear.
Disagreements that stay (each is ours being stricter, never looser):
- we do not rewrite a kept payload's manifest (the library's sweep drops its references that no
  longer hold); the manifest is a hint that the library re-validates, so the stale lines are
  harmless, and a cleanup that writes nothing but deletions is easier to trust;
- a symlink into the store from an entry we keep holds the payload even if the manifest does
  not list it (the library trusts the manifest's list; `test_an_unlisted_dataset_link_keeps_it`).
Xet's chunk cache (`huggingface/xet`) is written from hf-xet's layout: without a Xet CAS the
library cannot fill it here.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from huggingface_hub import hf_hub_download, scan_cache_dir  # a dev dependency: never skipped
from huggingface_hub.utils import _shared_blobs as store_lib

from magicstick_host.domain.model_cache.inventory import CacheInventory
from magicstick_host.effects.model_cache_shared import sweep_shared_blobs
from tests.harness.world import World
from tests.model_cache.cluster import clear_model_workloads
from tests.model_cache.helpers import walk

HUB = "root/.cache/huggingface/hub"
XET = "root/.cache/huggingface/xet"
READY = "strix-halo-ubuntu-26.04-ready"


def commit_of(kind: str, repo: str) -> str:
    """Each repository its own commit: `delete_revisions` takes bare commit hashes."""
    return hashlib.sha1(f"{kind}/{repo}".encode()).hexdigest()

MIB = 1024 * 1024


def content(seed: str, size: int) -> bytes:
    return (seed.encode() * (size // len(seed) + 1))[:size]


# repo -> file -> bytes. "shared" is in both models; "corpus" in beta and in the dataset
SHARED = content("shared weights ", 3 * MIB)
CORPUS = content("corpus shard ", 2 * MIB)
REPOS: dict[tuple[str, str], dict[str, bytes]] = {
    ("model", "org/alpha"): {"config.json": b'{"a": 1}', "model.safetensors":
                             content("alpha weights ", 5 * MIB), "shared.safetensors": SHARED},
    ("model", "org/beta"): {"config.json": b'{"b": 2}', "model.safetensors": SHARED,
                            "corpus.parquet": CORPUS},
    ("dataset", "org/corpus"): {"train.parquet": CORPUS, "README.md": b"# corpus\n"},
}
XET_MIN = 1 * MIB  # files this large are Xet files on the stand-in


def xet_hash(data: bytes) -> str:
    return hashlib.sha256(b"xet" + data).hexdigest()


class StandIn:
    """The loopback Hub: which Xet hashes it announces (those already in the store)."""

    def __init__(self) -> None:
        self.announce: set[str] = set()


def handler(stand_in: StandIn) -> type[BaseHTTPRequestHandler]:
    class Hub(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _file(self) -> tuple[str, bytes] | None:
            path = self.path.split("?", 1)[0].lstrip("/")
            kind = "model"
            if path.startswith("datasets/"):
                kind, path = "dataset", path[len("datasets/"):]
            org, name, resolve, _rev, *rest = path.split("/")
            data = REPOS.get((kind, f"{org}/{name}"), {}).get("/".join(rest))
            if resolve != "resolve" or data is None:
                return None
            return commit_of(kind, f"{org}/{name}"), data

        def _headers(self, commit: str, data: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
            self.send_header("X-Repo-Commit", commit)
            if xet_hash(data) in stand_in.announce:
                self.send_header("X-Xet-Hash", xet_hash(data))
                self.send_header("X-Xet-Refresh-Route", "/api/xet-token")
            self.end_headers()

        def do_HEAD(self) -> None:
            found = self._file()
            if found is None:
                self.send_error(404)
                return
            self._headers(*found)

        def do_GET(self) -> None:
            found = self._file()
            if found is None:
                self.send_error(404)
                return
            self._headers(*found)
            self.wfile.write(found[1])

    return Hub


@pytest.fixture
def hub_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, StandIn]]:
    stand_in = StandIn()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(stand_in))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", stand_in
    finally:
        server.shutdown()
        server.server_close()


def download_all(cache: Path, endpoint: str, stand_in: StandIn) -> None:
    """Every file of REPOS into `cache`, by the library's own download and store code."""
    for (kind, repo), files in REPOS.items():
        for name, data in files.items():
            pointer = hf_hub_download(repo, name, repo_type=kind, cache_dir=cache,
                                      endpoint=endpoint, token=False)
            assert Path(pointer).read_bytes() == data
            if len(data) < XET_MIN or xet_hash(data) in stand_in.announce:
                continue  # a small file stays a repo blob; a known one was linked by the library
            blob = cache / f"{kind}s--{repo.replace('/', '--')}" / "blobs" / \
                hashlib.sha256(data).hexdigest()
            assert store_lib.publish_blob_to_shared_store(
                blob_path=str(blob), xet_hash=xet_hash(data), cache_dir=cache,
                expected_size=len(data))
            stand_in.announce.add(xet_hash(data))


def write_xet_chunk_cache(root: Path) -> None:
    """hf-xet's cache beside the hub: chunk and shard caches per endpoint, and its logs."""
    endpoint = root / XET / "https___huggingface.co"
    for rel, size in (("chunk-cache/ab/ab" + "0" * 62, MIB), ("shard-cache/" + "c" * 64, 4096)):
        (endpoint / rel).parent.mkdir(parents=True, exist_ok=True)
        (endpoint / rel).write_bytes(b"\1" * size)
    (root / XET / "logs").mkdir(parents=True)
    (root / XET / "logs" / "xet.log").write_text("log\n")


def payload_bytes(hub: Path) -> int:
    """The apparent size of every blob the library counts: repo blobs that are regular files,
    and the store's payloads."""
    total = 0
    for path in hub.glob("*--*/blobs/*"):
        if path.is_file() and not path.is_symlink():
            total += path.stat().st_size
    return total + sum(p.stat().st_size for p in store_lib.shared_store_blob_paths(hub))


def tree_allocated(top: Path) -> dict[str, tuple[tuple[int, int], int]]:
    """Every path below `top` (not following symlinks) -> (inode, allocated bytes)."""
    found = {}
    for path in [top, *top.rglob("*")]:
        st = path.lstat()
        found[str(path.relative_to(top))] = ((st.st_dev, st.st_ino), st.st_blocks * 512)
    return found


def library_prediction(hub: Path) -> tuple[int, set[str]]:
    """What the library itself would free by deleting every model revision: its predicted
    freed bytes, and the store payloads it would sweep."""
    scan = scan_cache_dir(hub)
    revisions = [r.commit_hash for repo in scan.repos if repo.repo_type == "model"
                 for r in repo.revisions]
    strategy = scan.delete_revisions(*revisions)
    # as the library's own execute() collects them: the blobs it names, and those of the
    # repositories it deletes whole
    deleted_blobs = {Path(p) for p in strategy.blobs}
    deleted_blobs |= {b for repo in strategy.repos for b in (Path(repo) / "blobs").iterdir()}
    swept = {p.name for p in store_lib.shared_store_blob_paths(hub)
             if store_lib.expected_shared_blob_freed_size(
                 p, blob_paths_to_delete=deleted_blobs, cache_dir=hub) > 0}
    return strategy.expected_freed_size, swept


def hub_of(inventory: CacheInventory) -> Any:
    found = inventory.root("huggingface")
    assert found is not None and inventory.trusted, inventory.problem
    return found


@pytest.fixture
def world(tmp_path: Path, kube: Any, hub_endpoint: tuple[str, StandIn]) -> World:
    endpoint, stand_in = hub_endpoint
    world = World(tmp_path, kube, READY)
    download_all(world.root / HUB, endpoint, stand_in)
    write_xet_chunk_cache(world.root)
    return world


@pytest.mark.apiserver
def test_a_clear_frees_what_the_library_predicts(world: World, tmp_path: Path) -> None:
    hub = world.root / HUB
    scan = scan_cache_dir(hub)
    assert scan.warnings == []
    assert {(r.repo_type, r.repo_id) for r in scan.repos} == set(REPOS)
    payloads = store_lib.shared_store_blob_paths(hub)
    # three distinct Xet files, each once in the store; nothing unreferenced yet
    assert len(payloads) == 3 and store_lib.unreferenced_shared_blobs(hub) == {}
    predicted_freed, predicted_swept = library_prediction(hub)
    corpus = {xet_hash(CORPUS)}
    assert predicted_swept == {p.name for p in payloads} - corpus

    # our inventory: the same payloads, and reclaimable = what the library's deletion removes
    before = walk(world.root)
    ours = hub_of(before)
    assert {b.name for b in ours.shared_blobs} == predicted_swept
    copy = tmp_path / "library-copy" / "hub"
    shutil.copytree(hub, copy, symlinks=True)
    seen = tree_allocated(copy)
    scan_copy = scan_cache_dir(copy)
    scan_copy.delete_revisions(*[r.commit_hash for repo in scan_copy.repos
                                 if repo.repo_type == "model" for r in repo.revisions]).execute()
    remaining = tree_allocated(copy)
    # by path: the manifest the library rewrites may get an inode number freed just before
    vanished = {inode: size for path, (inode, size) in seen.items() if path not in remaining}
    assert ours.reclaimable_bytes == sum(vanished.values())
    # used: every inode under both roots once (the store payload once, however many links)
    under_roots = {**{f"hub/{k}": v for k, v in tree_allocated(hub).items()},
                   **{f"xet/{k}": v for k, v in tree_allocated(world.root / XET).items()}}
    used = sum(dict(under_roots.values()).values())
    xet = before.root("huggingface-xet")
    assert xet is not None and ours.used_bytes + xet.used_bytes == used
    # Xet's chunk cache: every entry, so all of it but the root directory itself
    assert xet.reclaimable_bytes == xet.used_bytes - tree_allocated(world.root / XET)["."][1]
    assert before.reclaimable_bytes == ours.reclaimable_bytes + xet.reclaimable_bytes

    # the clear, through the real tick
    clear_model_workloads(world.kube)
    section = world.published()["modelCache"]
    assert section["reclaimableBytes"] == before.reclaimable_bytes
    freed_before = payload_bytes(hub)
    world.create_request("clear-model-cache", planId=section["id"])
    assert world.drive() == "Succeeded"

    # what the library sees afterwards: only the dataset, its one payload, nothing stray
    after = scan_cache_dir(hub)
    assert {(r.repo_type, r.repo_id) for r in after.repos} == {("dataset", "org/corpus")}
    assert {p.name for p in store_lib.shared_store_blob_paths(hub)} == corpus
    assert store_lib.unreferenced_shared_blobs(hub) == {}
    assert freed_before - payload_bytes(hub) == predicted_freed
    for name, data in REPOS[("dataset", "org/corpus")].items():
        assert Path(hf_hub_download("org/corpus", name, repo_type="dataset", cache_dir=hub,
                                    local_files_only=True)).read_bytes() == data
    # the layout the library left in its own copy, less what only the library writes
    assert {p for p in tree_allocated(hub) if not p.endswith(".refs")} == \
        {p for p in tree_allocated(copy) if not p.endswith(".refs")}
    assert os.listdir(world.root / XET) == []
    assert walk(world.root).reclaimable_bytes == 0


def test_a_locked_payload_is_kept_and_said(
    tmp_path: Path, hub_endpoint: tuple[str, StandIn]
) -> None:
    """The library's lock held by another process (a download): that payload stays, the
    result says so; once the lock is free, it goes."""
    from magicstick_host.domain.model_cache.cleanup import kept_in_sweeps
    from tests.model_cache.helpers import bare_root

    endpoint, stand_in = hub_endpoint
    root = bare_root(tmp_path)
    hub = root / HUB
    download_all(hub, endpoint, stand_in)
    for entry in hub.glob("models--*"):
        shutil.rmtree(entry)
    ours = hub_of(walk(root))
    names = [b.name for b in ours.shared_blobs]
    assert sorted(names) == sorted(p.name for p in store_lib.unreferenced_shared_blobs(hub))
    busy = store_lib.shared_blob_path(hub, names[0])
    fd = os.open(f"{busy}.lock", os.O_WRONLY | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        out = sweep_shared_blobs(str(root), "/" + HUB, ours.identity, names)
    finally:
        os.close(fd)
    assert out.ok
    assert kept_in_sweeps([out.detail])["locked"][0] == 1
    assert busy.is_file()
    assert {p.name for p in store_lib.shared_store_blob_paths(hub)} == {names[0],
                                                                          xet_hash(CORPUS)}
    again = hub_of(walk(root))
    assert [b.name for b in again.shared_blobs] == [names[0]]
    out = sweep_shared_blobs(str(root), "/" + HUB, again.identity, [names[0]])
    assert out.ok and not busy.exists()
    assert store_lib.unreferenced_shared_blobs(hub) == {}


def test_an_unlisted_dataset_link_keeps_it(
    tmp_path: Path, hub_endpoint: tuple[str, StandIn]
) -> None:
    """Stricter than the library: a dataset's symlink into the store that its manifest does
    not list (a manifest line lost) keeps the payload. The library would sweep it and break
    the dataset's file."""
    from tests.model_cache.helpers import bare_root

    endpoint, stand_in = hub_endpoint
    root = bare_root(tmp_path)
    hub = root / HUB
    download_all(hub, endpoint, stand_in)
    corpus = store_lib.shared_blob_path(hub, xet_hash(CORPUS))
    manifest = corpus.with_name(corpus.name + ".refs")
    manifest.write_text("".join(line + "\n" for line in manifest.read_text().splitlines()
                                if line.startswith("models--")))
    names = {b.name for b in hub_of(walk(root)).shared_blobs}
    assert xet_hash(CORPUS) not in names
    # the library, on the same tree, would free it with the models
    _, swept = library_prediction(hub)
    assert xet_hash(CORPUS) in swept
