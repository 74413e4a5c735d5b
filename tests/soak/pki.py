"""The fault proxy's own TLS identity, and the worker's kubeconfig that points at the proxy.

The proxy terminates the worker's TLS with a certificate of its own CA (made with the openssl
CLI, as the test apiserver harness makes its client certificates) and opens its own TLS
connection to the apiserver with the worker's credentials. The worker's kubeconfig therefore
names the proxy's address and CA, and keeps the worker's user (a bearer token passes through in
the Authorization header; a client certificate is presented upstream by the proxy).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

# captured at import: the test suite's subprocess guard patches subprocess.Popen per test
_RUN = subprocess.run


@dataclass(frozen=True)
class Upstream:
    """Where the proxy forwards to, and as whom (read from the worker's own kubeconfig)."""

    host: str
    port: int
    ca_file: Path
    cert_file: Path | None = None
    key_file: Path | None = None


def _openssl(*args: str) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("the fault proxy needs the openssl CLI for its CA; not on PATH")
    proc = _RUN([openssl, *args], stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
                check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)}: {proc.stderr.decode(errors='replace')}")


def make_proxy_ca(directory: Path) -> tuple[Path, Path, Path]:
    """(ca.crt, server.crt, server.key): a CA and a serverAuth certificate for 127.0.0.1."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_crt = directory / "proxy-ca.key", directory / "proxy-ca.crt"
    key, csr, crt = directory / "proxy.key", directory / "proxy.csr", directory / "proxy.crt"
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(ca_key))
    _openssl("req", "-x509", "-new", "-key", str(ca_key), "-subj", "/CN=magicstick-soak-proxy-ca",
             "-days", "30", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", str(ca_crt))
    ext = directory / "proxy.ext"
    ext.write_text("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                   "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(key))
    _openssl("req", "-new", "-key", str(key), "-subj", "/CN=127.0.0.1", "-out", str(csr))
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_crt), "-CAkey", str(ca_key),
             "-set_serial", "1", "-days", "30", "-extfile", str(ext), "-out", str(crt))
    csr.unlink()
    for f in directory.iterdir():
        f.chmod(0o600)
    return ca_crt, crt, key


def _load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: not a kubeconfig")
    return doc


def _current(doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(cluster, user) of the kubeconfig's current context."""
    contexts = {c["name"]: c["context"] for c in doc.get("contexts") or []}
    context = contexts.get(doc.get("current-context", "")) or next(iter(contexts.values()))
    clusters = {c["name"]: c["cluster"] for c in doc["clusters"]}
    users = {u["name"]: u.get("user") or {} for u in doc["users"]}
    return clusters[context["cluster"]], users[context["user"]]


def _material(entry: dict[str, Any], key: str, work: Path, name: str) -> Path | None:
    """A file for `key` (a path) or `key-data` (inline base64) of a kubeconfig entry."""
    if entry.get(f"{key}-data"):
        path = work / name
        path.write_bytes(base64.b64decode(entry[f"{key}-data"]))
        path.chmod(0o600)
        return path
    return Path(entry[key]) if entry.get(key) else None


def upstream_of(worker_kubeconfig: Path, work: Path) -> Upstream:
    from urllib.parse import urlsplit

    cluster, user = _current(_load(worker_kubeconfig))
    url = urlsplit(cluster["server"])
    work.mkdir(parents=True, exist_ok=True)
    ca = _material(cluster, "certificate-authority", work, "upstream-ca.crt")
    if ca is None:
        raise ValueError(f"{worker_kubeconfig}: no certificate authority for the apiserver")
    return Upstream(
        host=url.hostname or "127.0.0.1",
        port=url.port or 443,
        ca_file=ca,
        cert_file=_material(user, "client-certificate", work, "upstream-client.crt"),
        key_file=_material(user, "client-key", work, "upstream-client.key"),
    )


def proxied_kubeconfig(worker_kubeconfig: Path, proxy_url: str, proxy_ca: Path,
                       out: Path) -> Path:
    """The worker's kubeconfig with the proxy as its server, in K3s's inline shape."""
    _, user = _current(_load(worker_kubeconfig))
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "default", "cluster": {
            "server": proxy_url,
            "certificate-authority-data": base64.b64encode(proxy_ca.read_bytes()).decode(),
        }}],
        "users": [{"name": "default", "user": user}],
        "contexts": [{"name": "default", "context": {"cluster": "default", "user": "default"}}],
        "current-context": "default",
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=out.parent, delete=False) as tmp:
        tmp.write(json.dumps(doc, indent=2) + "\n")
    Path(tmp.name).chmod(0o600)
    Path(tmp.name).replace(out)
    return out
