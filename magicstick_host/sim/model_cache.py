"""Model caches on simulated hosts, and the mount table they are judged against.

A cache is written once, when the host is created (`populate_model_caches`, from
`Host.model_caches`), and never re-rendered: a boot re-renders the host's facts, and a cache the
worker deleted must stay deleted. Layouts (names in `LAYOUTS`):
- `huggingface`: a Hugging Face hub as huggingface_hub 1.32 and later writes it: two
  `models--*` (blobs, refs, snapshots whose files are relative symlinks into blobs) whose
  weights are Xet files kept once in the shared blob store (`blobs/<2 hex>/<64 hex>` with its
  `.refs` manifest and `.lock`, the marker `blobs/.huggingface-shared-blobs`; the repository's
  `blobs/<etag>` is a relative symlink into it), a `datasets--*` that shares one store blob
  with a model, `.locks`, `version.txt`, the credentials `token` / `stored_tokens`, and Xet's
  chunk cache beside the hub (`huggingface/xet`): all but the models, the store blobs only
  they use and the chunk cache must survive a cleanup;
- `ollama`: Ollama's `blobs` and `manifests`, plus a sibling file and the key next to the
  root (`/root/.ollama/id_ed25519`), which must survive;
- `symlinked-root`: the hub itself is a symlink (to /srv/hf-hub): the inventory is untrusted;
- `symlink-inside`: the hub holds symlinks pointing out of the cache (a file link into
  /etc, and a whole `models--linked` entry pointing at /srv/precious): they are unlinked,
  never followed;
- `nested-mount`: a filesystem is mounted inside the hub (`Host.mounts`: the simulator cannot
  mount, so only the mount table shows it).
`add_many_files` adds a bulk of small files (the 100,000-inode case) to an existing root; it is
a generator for benchmarks and one test, not a scenario every test renders.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from magicstick_host.sim.builders import strix_host
from magicstick_host.sim.entries import Tree
from magicstick_host.sim.model import Host

HF_HUB = "root/.cache/huggingface/hub"
OLLAMA_MODELS = "root/.ollama/models"
LAYOUTS = ("huggingface", "ollama", "symlinked-root", "symlink-inside", "nested-mount")
NESTED_MOUNT = "/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B"
# bytes of each simulated weight file; `Host.model_cache_blob_bytes` overrides (the demo)
DEFAULT_BLOB_BYTES = 64 * 1024


def _blob(path: Path, size: int, seed: str) -> str:
    """A file of `size` allocated bytes (preallocated, not written); returns its sha256 name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, seed.encode())
        if size > len(seed):
            os.posix_fallocate(fd, 0, size)
    finally:
        os.close(fd)
    return hashlib.sha256(seed.encode()).hexdigest()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


STORE_MARKER = ".huggingface-shared-blobs"
# files this large are "Xet files" here: kept in the shared store, as most Hub weights are
XET_MIN_BYTES = 8192


def _shared_blob(hub: Path, repo_dir: str, etag: str, size: int, seed: str) -> None:
    """`<repo_dir>/blobs/<etag>` as huggingface_hub's shared store writes it: the payload once
    in `blobs/<xet hash[:2]>/<xet hash>`, a reference line appended to its manifest, its lock,
    and the repository's blob a relative symlink into the store."""
    store = hub / "blobs"
    store.mkdir(parents=True, exist_ok=True)
    (store / STORE_MARKER).write_text("1\n", encoding="utf-8")
    xet_hash = hashlib.sha256(f"xet:{seed}".encode()).hexdigest()
    payload = store / xet_hash[:2] / xet_hash
    if not payload.exists():
        _blob(payload, size, seed)
        os.chmod(payload, 0o400)
    (store / xet_hash[:2] / f"{xet_hash}.lock").touch()
    with open(store / xet_hash[:2] / f"{xet_hash}.refs", "a", encoding="utf-8") as refs:
        refs.write(f"{repo_dir}/blobs/{etag}\n")
    link = hub / repo_dir / "blobs" / etag
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(f"../../blobs/{xet_hash[:2]}/{xet_hash}", link)


def _hf_repo(hub: Path, repo_dir: str, files: dict[str, int],
             seeds: dict[str, str] | None = None) -> None:
    """One `<type>s--org--name` directory as huggingface_hub lays it out; a file of at least
    XET_MIN_BYTES goes to the shared store. `seeds` names a file's content (the same seed in
    two repositories is one store blob)."""
    base = hub / repo_dir
    revision = hashlib.sha1(repo_dir.encode()).hexdigest()
    _write(base / "refs" / "main", revision)
    for name, size in files.items():
        seed = (seeds or {}).get(name, f"{repo_dir}/{name}")
        etag = hashlib.sha256(seed.encode()).hexdigest()
        if size >= XET_MIN_BYTES:
            _shared_blob(hub, repo_dir, etag, size, seed)
        else:
            _blob(base / "blobs" / "pending", size, seed)
            os.replace(base / "blobs" / "pending", base / "blobs" / etag)
        link = base / "snapshots" / revision / name
        link.parent.mkdir(parents=True, exist_ok=True)
        depth = len(Path(name).parts) + 1  # snapshots/<rev>/<name...> up to the repo dir
        os.symlink("/".join([".."] * depth) + f"/blobs/{etag}", link)


def _hf_model(hub: Path, repo: str, files: dict[str, int],
              seeds: dict[str, str] | None = None) -> None:
    _hf_repo(hub, f"models--{repo.replace('/', '--')}", files, seeds)


# the one store blob a model shares with a dataset: it must survive the cleanup
SHARED_WITH_DATASET = "shared tokenizer"


def _xet_chunk_cache(xet: Path, size: int) -> None:
    """Xet's own cache beside the hub (hf-xet): chunk and shard caches per endpoint, logs."""
    endpoint = xet / "https___huggingface.co"
    _blob(endpoint / "chunk-cache" / "ab" / ("ab" + "1" * 62), size, "xet chunk")
    _blob(endpoint / "shard-cache" / ("c" * 64 + ".mdb"), 4096, "xet shard")
    _write(xet / "logs" / "xet-20261201.log", "simulated\n")


def _huggingface(root: Path, size: int, hub: Path | None = None) -> None:
    hub = hub or root / HF_HUB
    shared = {"tokenizer.json": SHARED_WITH_DATASET}
    _hf_model(hub, "Qwen/Qwen3-8B", {"config.json": 4096, "model-00001-of-00002.safetensors":
                                      size, "model-00002-of-00002.safetensors": size,
                                      "tokenizer.json": XET_MIN_BYTES}, shared)
    _hf_model(hub, "meta-llama/Llama-3.2-1B", {"config.json": 4096, "model.safetensors": size})
    _hf_repo(hub, "datasets--rajpurkar--squad", {"tokenizer.json": XET_MIN_BYTES}, shared)
    _blob(hub / "datasets--rajpurkar--squad" / "blobs" / "train", size, "squad")
    if hub == root / HF_HUB:
        _xet_chunk_cache(hub.parent / "xet", size)
    _write(hub / ".locks" / "models--Qwen--Qwen3-8B" / "x.lock", "")
    _write(hub / "version.txt", "1")
    # credentials: next to the models (never deleted) and where huggingface_hub keeps them
    _write(hub / "token", "hf_simulated_token_must_survive\n")
    _write(hub / "stored_tokens", "[default]\nhf_token = hf_simulated\n")
    _write(hub.parent / "token", "hf_simulated_token_must_survive\n")


def _ollama(root: Path, size: int) -> None:
    models = root / OLLAMA_MODELS
    digest = _blob(models / "blobs" / "pending", size, "llama3.2:3b weights")
    os.replace(models / "blobs" / "pending", models / "blobs" / f"sha256-{digest}")
    _write(models / "manifests" / "registry.ollama.ai" / "library" / "llama3.2" / "3b",
           '{"schemaVersion":2,"layers":[{"digest":"sha256:' + digest + '"}]}\n')
    _write(models / "keep-me.txt", "not part of the cache\n")
    _write(models.parent / "id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\nsim\n")


def _symlinked_root(root: Path, size: int) -> None:
    target = root / "srv" / "hf-hub"
    _huggingface(root, size, hub=target)
    hub = root / HF_HUB
    hub.parent.mkdir(parents=True, exist_ok=True)
    os.symlink("../../../srv/hf-hub", hub)


def _symlink_inside(root: Path, size: int) -> None:
    _huggingface(root, size)
    hub = root / HF_HUB
    precious = root / "srv" / "precious"
    _write(precious / "weights.bin", "outside the cache: must survive\n")
    os.symlink("../../../../srv/precious", hub / "models--linked")
    escape = hub / "models--Qwen--Qwen3-8B" / "snapshots" / "escape"
    escape.mkdir(parents=True)
    # snapshots/escape/hostname -> <root>/etc/hostname
    os.symlink("../../../../../../../etc/hostname", escape / "hostname")
    os.symlink("../../../../../../../srv/precious", escape / "precious-dir")


def with_model_caches(host: Host, *layouts: str) -> Host:
    """The builder option: `host` gets these cache layouts (and, for `nested-mount`, the
    mount inside the hub in its mount table)."""
    unknown = [layout for layout in layouts if layout not in LAYOUTS]
    if unknown:
        raise ValueError(f"unknown model-cache layouts {unknown}; known: {LAYOUTS}")
    host.model_caches = [*host.model_caches, *layouts]
    if "nested-mount" in layouts:
        host.mounts = [*host.mounts, NESTED_MOUNT]
    return host


def _ready_with(*layouts: str) -> Callable[[str, str], Host]:
    return lambda name, desc: with_model_caches(
        strix_host(name, desc, "26.04", "7.0.0-31-generic", with_uma=True), *layouts
    )


# (name, description, build), appended to the scenario table (sim/scenarios.py)
MODEL_CACHE_SCENARIOS: list[tuple[str, str, Callable[[str, str], Host]]] = [
    ("strix-halo-ubuntu-26.04-model-cache",
     "Strix Halo ready on 7.0.0-31 with Hugging Face and Ollama model caches to clear",
     _ready_with("huggingface", "ollama")),
    ("strix-halo-ubuntu-26.04-model-cache-symlinked-root",
     "Model caches where the Hugging Face hub is a symlink (to /srv/hf-hub): not clearable",
     _ready_with("symlinked-root", "ollama")),
    ("strix-halo-ubuntu-26.04-model-cache-symlink-inside",
     "Model caches with symlinks inside pointing out of the cache (/etc, /srv/precious)",
     _ready_with("symlink-inside", "ollama")),
    ("strix-halo-ubuntu-26.04-model-cache-nested-mount",
     "Model caches with a filesystem mounted inside the Hugging Face hub: not clearable",
     _ready_with("nested-mount", "ollama")),
]


def populate_model_caches(host: Host, root: Path) -> None:
    """Write the host's cache layouts into a freshly created root."""
    size = host.model_cache_blob_bytes or DEFAULT_BLOB_BYTES
    for layout in host.model_caches:
        if layout == "huggingface" or layout == "nested-mount":
            _huggingface(root, size)
        elif layout == "ollama":
            _ollama(root, size)
        elif layout == "symlinked-root":
            _symlinked_root(root, size)
        elif layout == "symlink-inside":
            _symlink_inside(root, size)
        else:
            raise ValueError(f"unknown model-cache layout {layout!r}; known: {LAYOUTS}")


def add_many_files(root: Path, inodes: int, *, per_directory: int = 1000) -> int:
    """Add `inodes` entries (directories and empty files) below the Hugging Face hub of the
    host at `root`, in `models--bulk-N/blobs/<i>` directories. Returns the entries added."""
    hub = Path(root) / HF_HUB
    hub.mkdir(parents=True, exist_ok=True)
    added, model = 0, 0
    while added < inodes:
        blobs = hub / f"models--bulk-{model:05d}" / "blobs"
        blobs.mkdir(parents=True)
        added += 2
        count = min(per_directory, inodes - added)
        directory = os.open(blobs, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for i in range(count):
                os.close(os.open(f"{i:06d}", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=directory))
        finally:
            os.close(directory)
        added += count
        model += 1
    return added


# -- the mount table (/proc/self/mountinfo) ---------------------------------------------------

BASE_MOUNTS = (
    "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro",
    "23 22 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw",
    "24 22 0:23 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw",
    "25 22 0:5 / /dev rw,nosuid,relatime shared:2 - devtmpfs udev rw,size=65536k,mode=755",
    "26 22 0:25 / /run rw,nosuid,nodev,noexec,relatime shared:5 - tmpfs tmpfs rw,mode=755",
    "27 22 259:1 / /boot/efi rw,relatime shared:31 - vfat /dev/nvme0n1p1 rw,fmask=0077",
    "31 26 0:48 / /run/k3s/containerd/io.containerd.runtime.v2.task/k8s.io/0b7c/rootfs "
    "rw,relatime shared:60 - overlay overlay rw,lowerdir=/var/lib/rancher/k3s/l1",
    "32 22 0:49 / /var/lib/kubelet/pods/6f1e/volumes/kubernetes.io~projected/kube-api-access "
    "rw,relatime shared:61 - tmpfs tmpfs rw,size=131072k",
)


def _escape(path: str) -> str:
    return (path.replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011")
            .replace("\n", "\\012"))


def mountinfo(host: Host) -> str:
    lines = list(BASE_MOUNTS)
    for n, point in enumerate(host.mounts):
        lines.append(f"{40 + n} 22 8:{n + 1} /models {_escape(point)} rw,relatime "
                     f"shared:{70 + n} - ext4 /dev/sda{n + 1} rw")
    return "\n".join(lines) + "\n"


def render_mounts(host: Host, tree: Tree) -> None:
    tree.file("proc/self/mountinfo", mountinfo(host))
