"""Read a kubeconfig into what a transport needs, or say in one line why it cannot be used.

The current context's cluster and user are resolved here, once, for both transports, so a
malformed file is the same KubeConfigError (bad input, exit 3) whichever transport serves it:
not YAML, not a mapping, a directory, no current context, a context naming a missing cluster
or user, a server URL that is not `https://host[:port][/prefix]` (or `http://`, which only the
official client serves: the lean transport refuses it rather than send a token or a client's
requests in clear text), data that is not base64, a referenced file that cannot be read.

What the lean transport serves (`official_only` empty): a server with a CA (inline
`certificate-authority-data` or a `certificate-authority` file) or the system trust,
`insecure-skip-tls-verify`, `tls-server-name`; a user with a client certificate and key (inline
`*-data` or files, as K3s writes its local admin kubeconfig) and/or a bearer token (`token` or
`tokenFile`). Inline data wins over a file, and `token` over `tokenFile`, as in the official
client. Relative file paths are relative to the kubeconfig's directory. Anything else in the
cluster or user (exec plugins, auth providers, username/password, proxy-url, unknown keys) is
named in `official_only`, and the official client serves that kubeconfig.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import stat
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from magicstick_host.errors import KubeConfigError
from magicstick_host.lite_dataclasses import dataclass, field
from magicstick_host.ports.command_memo import CommandMemo, recall_document, remember_document

if TYPE_CHECKING:
    from typing import Any

CLUSTER_KEYS = frozenset({
    "server", "certificate-authority", "certificate-authority-data",
    "insecure-skip-tls-verify", "tls-server-name", "extensions",
})
USER_KEYS = frozenset({
    "token", "tokenFile", "client-certificate", "client-certificate-data", "client-key",
    "client-key-data", "extensions",
})
# a kubeconfig is a few KiB; nothing legitimate nests deeply
MAX_BYTES = 1024 * 1024
MAX_DEPTH = 32
# a DNS name, an IPv4 address or an IPv6 address (urlsplit drops the brackets)
_HOST = re.compile(r"[A-Za-z0-9._-]+|[0-9A-Fa-f:.]+")


@dataclass(frozen=True)
class KubeConfig:
    path: str
    server: str
    scheme: str
    host: str
    port: int
    # the server URL's path, e.g. "/k8s" behind a proxy; "" for most clusters
    base_path: str
    ca_pem: str | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    token: str | None = None
    client_cert_pem: bytes | None = field(default=None, repr=False)
    client_key_pem: bytes | None = field(default=None, repr=False)
    # why only the official client can serve this kubeconfig; empty: the lean transport can
    official_only: tuple[str, ...] = ()


def _fail(path: str, why: str) -> KubeConfigError:
    # one line: YAML errors come with line breaks and carets
    return KubeConfigError(f"cannot load kubeconfig {path}: {' '.join(why.split())}")


def _read(path: str) -> bytes:
    # non-blocking, so that a FIFO in its place fails instead of waiting for a writer
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise _fail(path, exc.strerror or str(exc)) from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _fail(path, "Is a directory" if stat.S_ISDIR(mode) else "not a regular file")
    with os.fdopen(fd, "rb") as handle:
        raw = handle.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise _fail(path, f"larger than {MAX_BYTES} bytes")
    return raw


# what the memo's documents were parsed by; a change of the parsing below changes it
PARSE_VERSION = "kubeconfig-1"


def _parse_document(path: str, memo: CommandMemo | None) -> Any:
    raw = _read(path)
    # the same bytes parse to the same document: the timer's ticks keep it in the runtime
    # directory (beside the root-only file it came from) and need no YAML parser
    key = f"{PARSE_VERSION}:{hashlib.sha256(raw).hexdigest()}"
    # it holds the client key and the token: sealed with these bytes (domain/memo_trust.py),
    # so an edited memo that kept its key is not used, and only a reader of this file can
    # write one that is
    found, remembered = recall_document(memo, key, source=raw)
    if found:
        return remembered
    doc = _parse_yaml(path, raw)
    remember_document(memo, key, doc, source=raw)
    return doc


def _parse_yaml(path: str, raw: bytes) -> Any:
    import yaml

    # the C loader when built (20 times faster); its composer recurses in C, so the nesting
    # is checked first on the (iterative) event stream: deep nesting must not crash the tick
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        depth = 0
        for event in yaml.parse(raw, Loader=loader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _fail(path, f"not YAML: nested deeper than {MAX_DEPTH} levels")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        return yaml.load(raw, Loader=loader)
    except (yaml.YAMLError, ValueError) as exc:
        raise _fail(path, f"not YAML: {exc}") from exc
    except RecursionError as exc:
        raise _fail(path, "not YAML: nested too deeply") from exc


def _named(doc: Mapping[str, Any], section: str, name: str, path: str) -> Mapping[str, Any]:
    entries = doc.get(section)
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        raise _fail(path, f"{section} is not a list")
    for entry in entries:
        if isinstance(entry, Mapping) and entry.get("name") == name:
            body = entry.get(section[:-1])  # "clusters" → "cluster"
            if body is None:
                return {}
            if not isinstance(body, Mapping):
                raise _fail(path, f"{section[:-1]} {name!r} is not a mapping")
            return body
    raise _fail(path, f"no {section[:-1]} named {name!r}")


def _text(section: Mapping[str, Any], key: str, path: str) -> str | None:
    value = section.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _fail(path, f"{key} is not a string")
    return value


def _file(section: Mapping[str, Any], key: str, path: str, base_dir: str) -> bytes | None:
    """The content of the file named by `key`, relative to the kubeconfig's directory."""
    name = _text(section, key, path)
    if name is None:
        return None
    file = os.path.normpath(os.path.join(base_dir, name))
    try:
        with open(file, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise _fail(path, f"{key} {file}: {exc.strerror or exc}") from exc


def _data_or_file(
    section: Mapping[str, Any], key: str, path: str, base_dir: str
) -> bytes | None:
    """`key-data` (base64), else the file named by `key`.

    The base64 is Go's standard encoding as kubectl reads it (encoding/json): padded, and line
    breaks ignored, so data wrapped at 64 or 76 columns is read; anything else is refused, as
    kubectl refuses it (the official Python client skips any character outside the alphabet).
    """
    data = _text(section, f"{key}-data", path)
    if data is None:
        return _file(section, key, path, base_dir)
    try:
        return base64.b64decode(data.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _fail(path, f"{key}-data is not base64: {exc}") from exc


def _labels_ok(name: str) -> bool:
    """What ssl and the resolver require of an ASCII host name (the idna codec's rule, which
    the transport no longer passes it through: ports/kube_http.py): no empty label but a last
    one (a trailing dot), none longer than 63 characters."""
    labels = name.split(".")
    return all(0 < len(label) < 64 for label in labels[:-1]) and len(labels[-1]) < 64


def _server(cluster: Mapping[str, Any], path: str) -> tuple[str, str, str, int, str]:
    server = _text(cluster, "server", path)
    if server is None:
        raise _fail(path, "the cluster has no server")
    try:
        url = urlsplit(server)
        port = url.port
    except ValueError as exc:
        raise _fail(path, f"server {server!r} is not a URL: {exc}") from exc
    if url.scheme not in ("https", "http") or not url.hostname or not _HOST.fullmatch(url.hostname):
        raise _fail(path, f"server {server!r} is not an https:// URL with a host")
    if not _labels_ok(url.hostname):
        raise _fail(path, f"server {server!r}: the host name has an empty or too long label")
    if url.query or url.fragment or url.username or url.password:
        raise _fail(path, f"server {server!r} has a query, fragment or user part")
    default = 443 if url.scheme == "https" else 80
    return server, url.scheme, url.hostname, port or default, url.path.rstrip("/")


def _server_name(cluster: Mapping[str, Any], path: str) -> str | None:
    name = _text(cluster, "tls-server-name", path)
    if name is not None and name.isascii() and not _labels_ok(name):
        raise _fail(path, f"tls-server-name {name!r} has an empty or too long label")
    return name


def load_kubeconfig(path: str, memo: CommandMemo | None = None) -> KubeConfig:
    """The current context of the kubeconfig at `path`; KubeConfigError if it is unusable.
    `memo`, when given, remembers the parsed document by the file's bytes."""
    doc = _parse_document(path, memo)
    if not isinstance(doc, Mapping):
        raise _fail(path, "not a kubeconfig (the document is not a mapping)")
    context_name = doc.get("current-context")
    if not isinstance(context_name, str) or not context_name:
        raise _fail(path, "no current-context")
    context = _named(doc, "contexts", context_name, path)
    cluster_name = context.get("cluster")
    if not isinstance(cluster_name, str) or not cluster_name:
        raise _fail(path, f"context {context_name!r} names no cluster")
    cluster = _named(doc, "clusters", cluster_name, path)
    user_name = context.get("user")
    user: Mapping[str, Any] = {}
    if isinstance(user_name, str) and user_name:
        user = _named(doc, "users", user_name, path)
    server, scheme, host, port, base_path = _server(cluster, path)
    base_dir = os.path.dirname(os.path.abspath(path))

    official_only = tuple(
        [f"cluster {key}" for key in sorted(map(str, cluster)) if key not in CLUSTER_KEYS]
        + [f"user {key}" for key in sorted(map(str, user)) if key not in USER_KEYS]
    )
    ca = _data_or_file(cluster, "certificate-authority", path, base_dir)
    cert = _data_or_file(user, "client-certificate", path, base_dir)
    key = _data_or_file(user, "client-key", path, base_dir)
    if (cert is None) != (key is None):
        raise _fail(path, f"user {user_name!r} has a client certificate or key without the other")
    token = _text(user, "token", path)
    if token is None:
        from_file = _file(user, "tokenFile", path, base_dir)
        if from_file is not None:
            token = from_file.decode("utf-8", errors="replace").strip() or None
    if token is not None and not (token.isascii() and token.isprintable() and " " not in token):
        raise _fail(path, f"the token of user {user_name!r} has spaces or control characters")
    insecure = cluster.get("insecure-skip-tls-verify", False)
    if not isinstance(insecure, bool):
        raise _fail(path, "insecure-skip-tls-verify is not true or false")
    return KubeConfig(
        path=path,
        server=server,
        scheme=scheme,
        host=host,
        port=port,
        base_path=base_path,
        ca_pem=ca.decode("ascii", errors="replace") if ca is not None else None,
        insecure=insecure,
        tls_server_name=_server_name(cluster, path),
        token=token,
        client_cert_pem=cert,
        client_key_pem=key,
        official_only=official_only,
    )
