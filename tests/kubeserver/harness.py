"""Start and stop the real test apiserver (embedded etcd + kube-apiserver) on loopback.

    python -m tests.kubeserver.harness DIR

runs it in the foreground: writes a kubeconfig per user (admin, dashboard, worker, worker-cert,
admin-cert) into DIR, then DIR/ready once everything is installed and serving, and stops cleanly
on SIGINT/SIGTERM. The pytest fixture in fixtures.py uses `KubeServer` directly.

What `start()` does (see shared/design/kube-testserver.md):
- builds the binary if needed (build.py, cached outside the repo);
- picks free loopback ports, starts etcd + kube-apiserver with RBAC, a token file of three users
  and a client CA (made with the openssl CLI) for two certificate users, and waits for /readyz;
- creates the namespaces that belong to the cluster's own tree (ai-system, identity-system) and
  host-management, each unless a shipped manifest creates it;
- installs the shipped manifests (playbooks/files/manifests), the test CRDs (tests/crds) and the
  test-only worker RBAC, and waits until the CRDs are Established, their endpoints answer and
  every RBAC binding is in effect for the users it names.
Any start-up failure carries the tails of both logs (etcd and kube-apiserver).

Users:
- admin: in system:masters;
- dashboard: the ServiceAccount user
  system:serviceaccount:identity-system:ai-appliance-dashboard-api, bound to the shipped
  dashboard Role only;
- worker: user `magicstick-host-worker`, bound to the test-only ClusterRole in worker-rbac.yaml
  (production uses the node's K3s admin kubeconfig; the tests pin down what the worker touches);
- worker-cert: the same user, authenticated by a client certificate (CN=magicstick-host-worker),
  with a kubeconfig in the exact shape of K3s's /etc/rancher/k3s/k3s.yaml (inline base64
  certificate-authority-data, client-certificate-data, client-key-data; server
  https://127.0.0.1:<port>; cluster, user and context `default`);
- admin-cert: K3s's own admin (CN=system:admin, O=system:masters), in the same shape.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import json
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.kubeserver import build

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MANIFEST_DIRS = (REPO / "playbooks" / "files" / "manifests", REPO / "tests" / "crds")
EXTRA_MANIFESTS = (HERE / "worker-rbac.yaml",)
NAMESPACE = "ai-system"
# Namespaces a real appliance has before these manifests arrive: ai-system and identity-system
# belong to the cluster's own tree (never shipped here), host-management is shipped. The harness
# creates each one that no installed manifest creates.
CLUSTER_NAMESPACES = (NAMESPACE, "identity-system", "host-management")

# Captured at import: the test suite's subprocess guard patches subprocess.Popen per test.
_POPEN = subprocess.Popen


@dataclass(frozen=True)
class User:
    key: str
    name: str
    groups: tuple[str, ...]


USERS = (
    User("admin", "admin", ("system:masters",)),
    User(
        "dashboard",
        "system:serviceaccount:identity-system:ai-appliance-dashboard-api",
        ("system:serviceaccounts", "system:serviceaccounts:identity-system",
         "system:authenticated"),
    ),
    User("worker", "magicstick-host-worker", ("system:authenticated",)),
)

# Client-certificate users: CN is the user name, O the groups (system:authenticated is implied).
CERT_USERS = (
    User("worker-cert", "magicstick-host-worker", ()),
    User("admin-cert", "system:admin", ("system:masters",)),
)
ALL_USERS = USERS + CERT_USERS


class StartupError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"<{path}: {exc}>"
    return "\n".join(text.splitlines()[-lines:]) or "<empty>"


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    # PR_SET_PDEATHSIG: never leave a server running when the test process dies.
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


def _openssl(*args: str) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise StartupError("the openssl CLI is needed for the client certificates; not on PATH")
    proc = _POPEN([openssl, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                  stderr=subprocess.STDOUT)
    out, _ = proc.communicate(timeout=60)
    if proc.returncode != 0:
        raise StartupError(f"openssl {' '.join(args)}: {out.decode(errors='replace')[-800:]}")


def make_client_pki(directory: Path, users: Sequence[User]) -> Path:
    """A client CA and one certificate per user, signed by it; returns the CA certificate.

    ECDSA P-256 keys in SEC1 PEM ("EC PRIVATE KEY") and clientAuth certificates, as K3s makes
    them for its admin kubeconfig.
    """
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_crt = directory / "client-ca.key", directory / "client-ca.crt"
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(ca_key))
    _openssl("req", "-x509", "-new", "-key", str(ca_key), "-subj", "/CN=magicstick-test-client-ca",
             "-days", "30", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", str(ca_crt))
    ext = directory / "client.ext"
    ext.write_text("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                   "extendedKeyUsage=clientAuth\n")
    for u in users:
        key, csr, crt = (directory / f"{u.key}.{s}" for s in ("key", "csr", "crt"))
        subject = "".join(f"/O={g}" for g in u.groups) + f"/CN={u.name}"
        _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(key))
        _openssl("req", "-new", "-key", str(key), "-subj", subject, "-out", str(csr))
        _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_crt), "-CAkey", str(ca_key),
                 "-set_serial", str(secrets.randbits(63)), "-days", "30",
                 "-extfile", str(ext), "-out", str(crt))
        csr.unlink()
    for f in directory.iterdir():
        f.chmod(0o600)
    return ca_crt


def load_manifests(paths: Iterable[Path]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in paths:
        files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
        for f in files:
            docs += [d for d in yaml.safe_load_all(f.read_text()) if d]
    # Namespaces first, then CRDs, then the rest (RBAC)
    order = {"Namespace": 0, "CustomResourceDefinition": 1}
    return sorted(docs, key=lambda d: order.get(d["kind"], 2))


def collection_path(obj: dict[str, Any]) -> str:
    api_version: str = obj["apiVersion"]
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    ns = obj["metadata"].get("namespace")
    prefix = f"{base}/namespaces/{ns}" if ns else base
    return f"{prefix}/{obj['kind'].lower()}s"


class KubeServer:
    def __init__(self, workdir: Path, extra_args: Sequence[str] = ()) -> None:
        self.workdir = Path(workdir)
        self.extra_args = tuple(extra_args)
        self.tokens = {u.key: secrets.token_hex(16) for u in USERS}
        self.proc: subprocess.Popen[bytes] | None = None
        self._argv: list[str] = []
        self.port = 0
        self.start_seconds = 0.0
        self.install_seconds = 0.0
        self._ssl: dict[str, ssl.SSLContext] = {}

    # -- paths ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca_file(self) -> Path:
        return self.workdir / "certs" / "apiserver.crt"

    @property
    def apiserver_log(self) -> Path:
        return self.workdir / "kube-apiserver.log"

    @property
    def etcd_log(self) -> Path:
        return self.workdir / "etcd.log"

    @property
    def client_pki(self) -> Path:
        return self.workdir / "client-pki"

    def kubeconfig(self, user: str) -> Path:
        """The kubeconfig of a user key: admin, dashboard, worker, worker-cert, admin-cert."""
        if user not in {u.key for u in ALL_USERS}:
            raise KeyError(f"no such test user {user!r}")
        return self.workdir / f"{user}.kubeconfig"

    # -- lifecycle --------------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> None:
        binary = build.ensure_binary()
        last: StartupError | None = None
        for _attempt in range(3):  # a free port can be taken between probe and bind
            try:
                self._start_once(binary, timeout)
                return
            except StartupError as exc:
                self.stop()
                last = exc
                if "address already in use" not in str(exc):
                    raise
        assert last is not None
        raise last

    def _start_once(self, binary: Path, timeout: float) -> None:
        if self.workdir.exists():
            for sub in ("etcd", "certs", "client-pki"):
                shutil.rmtree(self.workdir / sub, ignore_errors=True)
        self.workdir.mkdir(parents=True, exist_ok=True)
        token_file = self.workdir / "tokens.csv"
        token_file.write_text("".join(
            f'{self.tokens[u.key]},{u.name},{u.key}-uid,"{",".join(u.groups)}"\n' for u in USERS
        ))
        token_file.chmod(0o600)
        client_ca = make_client_pki(self.client_pki, CERT_USERS)
        self._ssl.clear()
        etcd_port, peer_port, self.port = free_port(), free_port(), free_port()
        sa_key = self.workdir / "sa.key"
        argv = [
            str(binary),
            f"--etcd-dir={self.workdir / 'etcd'}",
            f"--etcd-client-port={etcd_port}",
            f"--etcd-peer-port={peer_port}",
            f"--etcd-log-file={self.etcd_log}",
            f"--sa-key-file={sa_key}",
            "--",
            f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--cert-dir={self.workdir / 'certs'}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={sa_key}",
            f"--service-account-signing-key-file={sa_key}",
            "--authorization-mode=RBAC",
            f"--token-auth-file={token_file}",
            f"--client-ca-file={client_ca}",
            "--disable-admission-plugins=ServiceAccount",
            "--endpoint-reconciler-type=none",
            "--v=0",
            *self.extra_args,
        ]
        self.etcd_log.write_text("")
        self._argv = argv
        started = time.monotonic()
        with open(self.apiserver_log, "wb") as log:
            self.proc = _POPEN(argv, stdin=subprocess.DEVNULL, stdout=log,
                               stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        try:
            self._wait_ready(started + timeout)
            self.start_seconds = time.monotonic() - started
            self._write_kubeconfigs()
            t0 = time.monotonic()
            self._install(started + timeout)
            self.install_seconds = time.monotonic() - t0
        except StartupError as exc:
            raise StartupError(self._with_logs(str(exc))) from None
        except Exception as exc:
            raise StartupError(self._with_logs(f"{type(exc).__name__}: {exc}")) from exc

    def resume(self, timeout: float = 120.0) -> None:
        """Start the server again after `stop()`, as it was: the same port, certificates, users
        and etcd data (the objects survive), as an apiserver restarted on its host is. Its
        manifests are already installed."""
        if not self._argv:
            raise StartupError("resume() before start(): nothing to start again")
        if self.proc is not None and self.proc.poll() is None:
            return
        started = time.monotonic()
        with open(self.apiserver_log, "ab") as log:
            self.proc = _POPEN(self._argv, stdin=subprocess.DEVNULL, stdout=log,
                               stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        try:
            self._wait_ready(started + timeout)
        except StartupError as exc:
            raise StartupError(self._with_logs(str(exc))) from None
        self.start_seconds = time.monotonic() - started

    @property
    def serving(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _with_logs(self, msg: str) -> str:
        return (
            f"{msg}\n--- etcd log tail ({self.etcd_log}) ---\n{tail(self.etcd_log)}"
            f"\n--- kube-apiserver log tail ({self.apiserver_log}) ---\n{tail(self.apiserver_log)}"
        )

    def stop(self, grace: float = 20.0) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def __enter__(self) -> KubeServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- HTTP as a user (stdlib only: the harness does not depend on the client library) -----

    def _context(self, user: str) -> ssl.SSLContext:
        if user not in self._ssl:
            context = ssl.create_default_context(cafile=str(self.ca_file))
            if user in {u.key for u in CERT_USERS}:
                context.load_cert_chain(self.client_pki / f"{user}.crt",
                                        self.client_pki / f"{user}.key")
            self._ssl[user] = context
        return self._ssl[user]

    def request(self, method: str, path: str, body: Any = None, user: str = "admin",
                content_type: str = "application/json") -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if user in self.tokens:
            req.add_header("Authorization", f"Bearer {self.tokens[user]}")
        elif user not in {u.key for u in CERT_USERS}:
            raise KeyError(f"no such test user {user!r}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=10, context=self._context(user)) as resp:
                raw = resp.read()
                status = resp.status
        except urllib.error.HTTPError as err:
            raw, status = err.read(), err.code
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    def _alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise StartupError(f"kubeserver exited with code {self.proc.returncode}")

    def _wait_ready(self, deadline: float) -> None:
        last = ""
        while time.monotonic() < deadline:
            self._alive()
            if self.ca_file.exists():
                try:
                    status, body = self.request("GET", "/readyz")
                    if status == 200:
                        return
                    last = f"/readyz: {status} {body!r:.300}"
                except (OSError, ssl.SSLError) as exc:
                    last = f"/readyz: {exc}"
            time.sleep(0.25)
        raise StartupError(f"kube-apiserver not ready in time ({last})")

    def _poll(self, what: str, check: Any, deadline: float) -> None:
        last: object = None
        while time.monotonic() < deadline:
            self._alive()
            ok, last = check()
            if ok:
                return
            time.sleep(0.1)
        raise StartupError(f"timed out waiting for {what}: {last!r:.500}")

    def _install(self, deadline: float) -> None:
        docs = load_manifests([*MANIFEST_DIRS, *EXTRA_MANIFESTS])
        shipped = {d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"}
        namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                      for name in CLUSTER_NAMESPACES if name not in shipped]
        for obj in namespaces + docs:
            status, body = self.request("POST", collection_path(obj), obj)
            if status not in (200, 201):
                raise StartupError(
                    f"creating {obj['kind']} {obj['metadata']['name']}: {status} {body!r:.800}"
                )
        for obj in docs:
            if obj["kind"] == "CustomResourceDefinition":
                self._wait_for_crd(obj, deadline)
        # RBAC bindings take effect through informers: wait until each user they name sees them
        for binding in docs:
            for user, attrs in binding_checks(binding, docs):
                def allowed(user: str = user, attrs: dict[str, str] = attrs) -> tuple[bool, Any]:
                    return self.access_allowed(user, attrs), attrs

                self._poll(f"RBAC {binding['metadata']['name']} for {user}", allowed, deadline)

    def _wait_for_crd(self, obj: dict[str, Any], deadline: float) -> None:
        name = obj["metadata"]["name"]

        def established() -> tuple[bool, Any]:
            status, body = self.request(
                "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
            conds = (body or {}).get("status", {}).get("conditions", []) if status == 200 else []
            return any(c["type"] == "Established" and c["status"] == "True"
                       for c in conds), body

        self._poll(f"CRD {name} Established", established, deadline)
        spec = obj["spec"]
        version = next(v["name"] for v in spec["versions"] if v.get("served"))
        scope = f"/namespaces/{NAMESPACE}" if spec["scope"] == "Namespaced" else ""
        path = f"/apis/{spec['group']}/{version}{scope}/{spec['names']['plural']}"

        def answers() -> tuple[bool, Any]:
            status, body = self.request("GET", path)
            return status == 200, (status, body)

        self._poll(f"{path} to answer", answers, deadline)

    def access_allowed(self, user: str, attrs: dict[str, str]) -> bool:
        """A SelfSubjectAccessReview as `user`: what the authorizer says now."""
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attrs}}
        status, out = self.request(
            "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body, user=user)
        if status != 201:
            raise StartupError(f"SelfSubjectAccessReview as {user}: {status} {out!r:.500}")
        return bool(out["status"].get("allowed"))

    def _write_kubeconfigs(self) -> None:
        for u in USERS:
            cfg: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "kubeserver", "cluster": {
                    "server": self.url, "certificate-authority": str(self.ca_file)}}],
                "users": [{"name": u.key, "user": {"token": self.tokens[u.key]}}],
                "contexts": [{"name": u.key, "context": {"cluster": "kubeserver", "user": u.key,
                                                         "namespace": NAMESPACE}}],
                "current-context": u.key,
            }
            self._write_private(self.kubeconfig(u.key), json.dumps(cfg, indent=2) + "\n")
        for u in CERT_USERS:
            self._write_private(self.kubeconfig(u.key), yaml.safe_dump(self._k3s_shaped(u)))

    def _k3s_shaped(self, user: User) -> dict[str, Any]:
        """What K3s writes to /etc/rancher/k3s/k3s.yaml, for this user's client certificate."""
        def b64(path: Path) -> str:
            return base64.b64encode(path.read_bytes()).decode()

        return {
            "apiVersion": "v1",
            "clusters": [{"cluster": {"certificate-authority-data": b64(self.ca_file),
                                      "server": self.url},
                          "name": "default"}],
            "contexts": [{"context": {"cluster": "default", "user": "default"},
                          "name": "default"}],
            "current-context": "default",
            "kind": "Config",
            "preferences": {},
            "users": [{"name": "default", "user": {
                "client-certificate-data": b64(self.client_pki / f"{user.key}.crt"),
                "client-key-data": b64(self.client_pki / f"{user.key}.key")}}],
        }

    @staticmethod
    def _write_private(path: Path, text: str) -> None:
        path.write_text(text)
        path.chmod(0o600)


def binding_checks(binding: dict[str, Any],
                   docs: Sequence[dict[str, Any]]) -> list[tuple[str, dict[str, str]]]:
    """(user key, access attributes) that hold once `binding` is in effect, for every test user
    it names: the first verb and resource of the first rule of the role it binds."""
    if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
        return []
    namespace = binding["metadata"].get("namespace", "")
    ref = binding["roleRef"]
    role = next((d for d in docs if d["kind"] == ref["kind"]
                 and d["metadata"]["name"] == ref["name"]
                 and d["metadata"].get("namespace", "") == (
                     namespace if ref["kind"] == "Role" else "")), None)
    if role is None or not role.get("rules"):
        return []
    rule = role["rules"][0]
    resource, _, subresource = rule["resources"][0].partition("/")
    verb = rule["verbs"][0]
    group = rule["apiGroups"][0]
    attrs = {"verb": "get" if verb == "*" else verb, "group": "" if group == "*" else group,
             "resource": resource, "namespace": namespace or NAMESPACE}
    if subresource:
        attrs["subresource"] = subresource
    if rule.get("resourceNames"):
        attrs["name"] = rule["resourceNames"][0]
    names = set()
    for subject in binding.get("subjects", []):
        if subject["kind"] == "ServiceAccount":
            names.add(f"system:serviceaccount:{subject['namespace']}:{subject['name']}")
        elif subject["kind"] == "User":
            names.add(subject["name"])
    groups = {s["name"] for s in binding.get("subjects", []) if s["kind"] == "Group"}
    return [(u.key, attrs) for u in ALL_USERS if u.name in names or groups & set(u.groups)]


@contextlib.contextmanager
def running(workdir: Path) -> Iterator[KubeServer]:
    server = KubeServer(workdir)
    try:
        server.start()
        yield server
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m tests.kubeserver.harness DIR", file=sys.stderr)
        return 2
    out = Path(args[0]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / "ready").unlink(missing_ok=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    server = KubeServer(out / "server")
    try:
        server.start()
    except (StartupError, build.GoMissingError, build.BuildError) as exc:
        server.stop()
        print(f"[kubeserver] start failed: {exc}", file=sys.stderr)
        return 1
    try:
        for u in ALL_USERS:
            shutil.copyfile(server.kubeconfig(u.key), out / f"{u.key}.kubeconfig")
            (out / f"{u.key}.kubeconfig").chmod(0o600)
        (out / "ready").write_text(server.url + "\n")
        print(f"[kubeserver] serving {server.url}; apiserver ready in {server.start_seconds:.1f} s,"
              f" manifests installed in {server.install_seconds:.1f} s", file=sys.stderr)
        keys = ",".join(u.key for u in ALL_USERS)
        print(f"[kubeserver] kubeconfigs: {out}/{{{keys}}}.kubeconfig; Ctrl-C stops",
              file=sys.stderr, flush=True)
        while not stop.wait(1.0):
            if server.proc is None or server.proc.poll() is not None:
                print("[kubeserver] the server exited", file=sys.stderr)
                print(server._with_logs(""), file=sys.stderr)
                return 1
    finally:
        (out / "ready").unlink(missing_ok=True)
        server.stop()
        print("[kubeserver] stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
