"""The live suite's way to the cluster: one kubeconfig context, guarded requests, impersonation.

- `select_context(kubeconfig, context)` reads the administrator's kubeconfig, refuses a missing
  or unknown context (before any request is sent), and writes a private copy (0600, in a 0700
  temporary directory) whose current context is the chosen one, with relative file paths made
  absolute. The worker's own Kubernetes port (RealKube) reads its current context, so it gets
  that copy; the suite's own requests use the same credentials.
- `Client.call(...)` sends one request, as the context's own identity or, with `as_user`, as a
  ServiceAccount by impersonation (`Impersonate-User: system:serviceaccount:<ns>:<sa>`; the
  server adds the ServiceAccount's groups). Every request is logged.
- The guard: a write (anything but GET) is sent only if it is a server dry run, a
  SelfSubject*Review (nothing stored), inside the run's own namespace, the namespace itself, or
  the HostOperation CRD while the run is allowed to install or remove it. Anything else is a bug
  of the suite and raises GuardError before it is sent.
"""

from __future__ import annotations

import copy
import http.client
import json
import os
import ssl
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import yaml

from magicstick_host.errors import KubeConfigError
from magicstick_host.ports.kube_http import ssl_context
from magicstick_host.ports.kubeconfig import KubeConfig, load_kubeconfig
from tests.contract.cases import CRD_NAME, CRD_PATH, JSON, Call

REVIEWS = ("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
           "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
           "/apis/authentication.k8s.io/v1/selfsubjectreviews")


class Refused(Exception):
    """The run does not start: nothing was sent to any cluster."""


class GuardError(AssertionError):
    """The suite tried a write outside what it may touch; it was not sent."""


@dataclass(frozen=True)
class Selected:
    kubeconfig: Path  # the administrator's file
    context: str
    cluster: str
    user: str
    server: str
    private_copy: Path  # current-context = context; removed by `remove()`
    config: KubeConfig

    def remove(self) -> None:
        self.private_copy.unlink(missing_ok=True)
        with_dir = self.private_copy.parent
        if with_dir.name.startswith("magicstick-contract-live-"):
            with_dir.rmdir()


def default_kubeconfig() -> str:
    return os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")


_PATH_KEYS = {"cluster": ("certificate-authority",),
              "user": ("client-certificate", "client-key", "tokenFile")}


def select_context(kubeconfig: str, context: str) -> Selected:
    """The chosen context of the kubeconfig, or Refused with the reason (nothing sent)."""
    if not context:
        raise Refused("no context named: say which cluster to test, "
                      "e.g. `make contract-live CONTEXT=default`; nothing was sent")
    if os.pathsep in kubeconfig:
        raise Refused(f"KUBECONFIG names several files ({kubeconfig}): name one; nothing was "
                      "sent")
    path = Path(kubeconfig).expanduser()
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise Refused(f"cannot read kubeconfig {path}: {' '.join(str(exc).split())}") from exc
    if not isinstance(doc, dict):
        raise Refused(f"{path} is not a kubeconfig")
    contexts = {c.get("name"): c.get("context") or {} for c in doc.get("contexts") or []
                if isinstance(c, dict)}
    if context not in contexts:
        names = ", ".join(sorted(str(n) for n in contexts)) or "none"
        raise Refused(f"no context {context!r} in {path} (it has: {names}); nothing was sent")
    chosen = contexts[context]
    base = path.resolve().parent
    private = copy.deepcopy(doc)
    private["current-context"] = context
    for section, keys in _PATH_KEYS.items():
        for entry in private.get(section + "s") or []:
            body: Any = entry.get(section) if isinstance(entry, dict) else None
            for key in keys if isinstance(body, dict) else ():
                value = body.get(key)
                if isinstance(value, str) and value and not os.path.isabs(value):
                    body[key] = str(base / value)
    directory = Path(tempfile.mkdtemp(prefix="magicstick-contract-live-"))
    copy_path = directory / "kubeconfig"
    fd = os.open(copy_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(json.dumps(private))
    try:
        config = load_kubeconfig(str(copy_path))
    except KubeConfigError as exc:
        copy_path.unlink()
        directory.rmdir()
        raise Refused(f"context {context!r}: {exc}") from exc
    if config.official_only:
        copy_path.unlink()
        directory.rmdir()
        raise Refused(f"context {context!r} needs {', '.join(config.official_only)}: the suite "
                      "sends its requests with a client certificate or a token only (as K3s's "
                      "kubeconfig has); nothing was sent")
    return Selected(path, context, str(chosen.get("cluster", "")), str(chosen.get("user", "")),
                    config.server, copy_path, config)


@dataclass
class Sent:
    method: str
    path: str
    as_user: str
    status: int

    @property
    def dry_run(self) -> bool:
        return ("dryRun", "All") in parse_qsl(urlsplit(self.path).query)


@dataclass
class Client:
    config: KubeConfig
    namespace: str
    timeout: float = 20.0
    may_create_crd: bool = False
    may_delete_crd: bool = False
    log: list[Sent] = field(default_factory=list)
    _context: ssl.SSLContext | None = None
    _connection: _Connection | None = None

    def __post_init__(self) -> None:
        if self.config.scheme == "https":
            self._context = ssl_context(self.config)

    # -- the guard ------------------------------------------------------------------------------

    def allowed(self, method: str, path: str) -> bool:
        if method == "GET":
            return True
        url = urlsplit(path)
        if ("dryRun", "All") in parse_qsl(url.query):
            return True
        p = url.path.rstrip("/")
        if method == "POST" and p in REVIEWS:
            return True
        ns = self.namespace
        if p == "/api/v1/namespaces" and method == "POST":
            return True  # the body is checked in `call`
        if p == f"/api/v1/namespaces/{ns}" and method == "DELETE":
            return True
        if (p.startswith(("/api/", "/apis/")) and "/namespaces/" in p
                and p.split("/namespaces/", 1)[1].split("/")[0] == ns
                and p.split("/namespaces/", 1)[1] != ns):
            return True  # an object inside the run's namespace (not the namespace itself)
        if p == CRD_PATH and method == "POST":
            return self.may_create_crd
        if p == f"{CRD_PATH}/{CRD_NAME}" and method == "DELETE":
            return self.may_delete_crd
        return False

    # -- one exchange -----------------------------------------------------------------------

    def call(self, method: str, path: str, body: Any = None, content_type: str = JSON, *,
             as_user: str = "") -> tuple[int, Any]:
        if not self.allowed(method, path):
            raise GuardError(f"refused to send {method} {path}: outside what this run touches")
        if (urlsplit(path).path.rstrip("/") == "/api/v1/namespaces" and method == "POST"
                and (body or {}).get("metadata", {}).get("name") != self.namespace):
            raise GuardError("refused to create a namespace other than the run's own")
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json", "User-Agent": "magicstick-host-contract-live"}
        if data is not None:
            headers["Content-Type"] = content_type
        if self.config.token:
            headers["Authorization"] = f"Bearer {self.config.token}"
        if as_user:
            headers["Impersonate-User"] = as_user
        status, raw = self._exchange(method, self.config.base_path + path, data, headers)
        self.log.append(Sent(method, path, as_user, status))
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    def _exchange(self, method: str, target: str, data: bytes | None,
                  headers: dict[str, str]) -> tuple[int, bytes]:
        """One request on the kept connection (straight to the server, never a proxy); a read
        the server dropped on a kept connection goes again once on a new one, a write never."""
        for attempt in (1, 2):
            reused = self._connection is not None
            if self._connection is None:
                self._connection = _Connection(self.config, self._context, self.timeout)
            try:
                self._connection.request(method, target, data, headers)
                response = self._connection.getresponse()
                return response.status, response.read()
            except BaseException as exc:  # a signal too: the connection is mid-exchange
                self._connection.close()
                self._connection = None
                retry = isinstance(exc, OSError | http.client.HTTPException)
                if attempt == 2 or not reused or method != "GET" or not retry:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def as_identity(self, as_user: str = "") -> Call:
        """The shared checks' `call`, as this identity (tests/contract/cases.py)."""
        def call(method: str, path: str, body: Any, content_type: str) -> tuple[int, Any]:
            return self.call(method, path, body, content_type, as_user=as_user)

        return call

    def ok(self, method: str, path: str, body: Any = None, content_type: str = JSON, *,
           as_user: str = "") -> dict[str, Any]:
        status, out = self.call(method, path, body, content_type, as_user=as_user)
        if not 200 <= status <= 299 or not isinstance(out, dict):
            detail = out.get("message") if isinstance(out, dict) else out
            raise AssertionError(f"{method} {path}: HTTP {status}: {str(detail)[:500]}")
        return out

    def nodes_modified(self) -> int:
        """Writes to Nodes that the server accepted for real (not as a dry run)."""
        return sum(1 for s in self.log if s.method != "GET" and not s.dry_run
                   and urlsplit(s.path).path.startswith("/api/v1/nodes")
                   and 200 <= s.status <= 299)


class _Connection(http.client.HTTPConnection):
    """HTTP/1.1 to the kubeconfig's server, TLS as the kubeconfig says (CA, client
    certificate, tls-server-name)."""

    def __init__(self, config: KubeConfig, context: ssl.SSLContext | None,
                 timeout: float) -> None:
        super().__init__(config.host, config.port, timeout=timeout)
        self._tls, self._server_name = context, config.tls_server_name or config.host

    def connect(self) -> None:
        super().connect()
        if self._tls is not None:
            self.sock = self._tls.wrap_socket(self.sock, server_hostname=self._server_name)


def service_account_user(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


# -- discovery: every listable resource -----------------------------------------------------------


def listable_resources(get: Callable[[str], tuple[int, Any]],
                       namespaced: bool | None = None) -> Iterator[tuple[str, str, bool]]:
    """(group/version path, plural, namespaced) of every resource that can be listed, for the
    preferred version of every group."""
    versions = ["/api/v1"]
    status, groups = get("/apis")
    if status == 200:
        for group in groups.get("groups", []):
            preferred = group.get("preferredVersion") or group["versions"][0]
            versions.append("/apis/" + preferred["groupVersion"])
    for base in versions:
        status, found = get(base)
        if status != 200:
            continue
        for resource in found.get("resources", []):
            if "/" in resource["name"] or "list" not in resource.get("verbs", []):
                continue
            if namespaced is not None and bool(resource.get("namespaced")) != namespaced:
                continue
            yield base, resource["name"], bool(resource.get("namespaced"))


# made by the cluster's own controllers in every namespace, and removed by its namespace
# controller: not the run's
CLUSTER_MADE = {("/api/v1", "serviceaccounts", "default"),
                ("/api/v1", "configmaps", "kube-root-ca.crt")}
NOT_CONTENTS = {("/api/v1", "events"), ("/apis/events.k8s.io/v1", "events")}


def namespace_objects(get: Callable[[str], tuple[int, Any]],
                      namespace: str) -> list[tuple[str, str, str]]:
    """(description, path, uid) of every object in `namespace` but what the cluster's own
    controllers put there (its `default` ServiceAccount, `kube-root-ca.crt`, events)."""
    found: list[tuple[str, str, str]] = []
    for base, plural, _ in listable_resources(get, namespaced=True):
        if (base, plural) in NOT_CONTENTS:
            continue
        collection = f"{base}/namespaces/{namespace}/{plural}"
        status, listed = get(collection)
        if status != 200:
            continue
        for item in listed.get("items", []):
            meta = item["metadata"]
            if (base, plural, meta["name"]) not in CLUSTER_MADE:
                found.append((f"{plural}/{meta['name']}", f"{collection}/{meta['name']}",
                              str(meta.get("uid", ""))))
    return found
