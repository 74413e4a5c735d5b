"""One run of the live contract suite against the cluster of one kubeconfig context.

What a run does, in order (each step a named check in the summary):
1. looks for what an earlier run may have left (namespaces and a CRD carrying this suite's
   label); a Terminating namespace with nothing in it is fine (the cluster's namespace
   controller finishes it; the suite's test apiserver has none, so there it stays);
2. creates the namespace `magicstick-host-contract-<10 hex>` (labelled with the run id);
3. the HostOperation CRD: absent → installed from the shipped manifest (labelled), removed at
   the end; present → compared field by field with the shipped one and never replaced;
4. ServiceAccounts, Roles and RoleBindings in that namespace: the shipped dashboard Roles'
   rules (HostOperations; the network request Secrets) for `ai-appliance-dashboard-api`, and
   the test worker's namespaced rights (tests/kubeserver/worker-rbac.yaml) for
   `magicstick-host-worker`; each exercised by impersonation, the yes and the no;
5. every request the dashboard sends and every rejection the CRD and its CEL rules must give,
   as server dry runs (the cases of tests/contract/cases.py, shared with the pytest suite);
6. the worker's own Kubernetes port (magicstick_host.ports.kube.RealKube, the code the tick
   uses) writing a reboot's and a two-stage memory change's status phases through the status
   subresource, with UID and resourceVersion preconditions and their conflicts, each read back
   as the dashboard reads it;
7. cleanup, also after Ctrl-C or SIGTERM: every object the run created (then anything else in
   its namespace), the namespace, the CRD only if this run installed it, and a last look that
   nothing is left.
No Node is read or written; no power or firmware executor exists in this process.
"""

from __future__ import annotations

import secrets
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlencode

import yaml

from magicstick_host.domain.text import clip_message
from magicstick_host.errors import KubeConflictError, KubeNotFoundError, KubePermanentError
from magicstick_host.ports.kube import RealKube, hostoperation_name
from tests.contract import cases
from tests.contract.cases import (
    CRD_NAME,
    CRD_PATH,
    DRY_RUN,
    IMMUTABLE,
    MANIFESTS,
    MERGE,
    NODE_NAMES_ADMITTED,
    NODE_NAMES_REJECTED,
    REJECTED,
    REQUIRED_FIELDS,
    STATUS_REJECTED,
    VIOLATIONS,
    expect,
    hostops,
    message_of,
    with_query,
)
from tests.contract.dashboard_objects import (
    GROUP,
    VERSION,
    dashboard_object,
    dashboard_spec,
    dashboard_variants,
    hexs,
)
from tests.contract_live.client import (
    Client,
    GuardError,
    Selected,
    Sent,
    namespace_objects,
    service_account_user,
)
from tests.contract_live.crd_check import differences, established

PREFIX = "magicstick-host-contract-"
LABEL = "appliance.magicstick.dev/contract-live"
DASHBOARD_SA = "ai-appliance-dashboard-api"
WORKER_SA = "magicstick-host-worker"
WORKER_RBAC = Path(__file__).resolve().parents[1] / "kubeserver" / "worker-rbac.yaml"
DASHBOARD_ROLES = ("magicstick-host-20-dashboard-host-operations-role.yaml",
                   "magicstick-host-31-dashboard-network-credentials-role.yaml")
RBAC = "/apis/rbac.authorization.k8s.io/v1"
WAIT_S = 60.0


class Stop(BaseException):
    """SIGINT or SIGTERM: stop the checks, clean up, report."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass
class Check:
    name: str
    result: str
    detail: str = ""


def _now(offset_s: float = 0) -> str:
    moment = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=offset_s)
    return moment.isoformat().replace("+00:00", "Z")


def _delete_options(uid: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}}


def _wait(what: str, ready: Callable[[], bool], seconds: float = WAIT_S) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}")
        time.sleep(0.2)


class GuardedTransport:
    """The port's own transport, with the run's guard and request log in front of it."""

    def __init__(self, inner: Any, client: Client) -> None:
        self.inner, self.client = inner, client
        self.name: str = inner.name

    def request(self, method: str, path: str, query: list[tuple[str, str]], *rest: Any,
                **kw: Any) -> tuple[int, bytes]:
        full = path + (f"?{urlencode(query)}" if query else "")
        if not self.client.allowed(method, full):
            raise GuardError(f"the worker port tried {method} {full}: not sent")
        status, raw = self.inner.request(method, path, query, *rest, **kw)
        self.client.log.append(Sent(method, full, "worker-port", status))
        return status, raw


@dataclass
class LiveRun:
    selected: Selected
    out: TextIO = sys.stderr
    run_id: str = field(default_factory=lambda: secrets.token_hex(5))
    checks: list[Check] = field(default_factory=list)
    # (what, path, uid) of every object this run created, in order
    created: list[tuple[str, str, str]] = field(default_factory=list)
    crd: str = "not looked at"
    cleaning: bool = False
    interrupted: str = ""
    _namespace_uid: str = ""
    _crd_installing: bool = False
    _crd_uid: str = ""

    def __post_init__(self) -> None:
        self.namespace = PREFIX + self.run_id
        self.client = Client(self.selected.config, self.namespace)
        self.dashboard = service_account_user(self.namespace, DASHBOARD_SA)
        self.worker = service_account_user(self.namespace, WORKER_SA)

    # -- bookkeeping -----------------------------------------------------------------------------

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def check(self, name: str, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """Run one check; a failure is recorded (with its reason) and the run goes on."""
        try:
            value = fn(*args, **kw)
        except Exception as exc:  # every failure is a result, not a crash
            detail = " ".join(str(exc).split()) or type(exc).__name__
            if not isinstance(exc, AssertionError):
                detail = f"{type(exc).__name__}: {detail}"
            self.checks.append(Check(name, "failed", detail[:2000]))
            self.say(f"  FAIL {name}: {detail[:600]}")
            return None
        self.checks.append(Check(name, "passed"))
        return True if value is None else value

    def get(self, path: str) -> tuple[int, Any]:
        return self.client.call("GET", path)

    def create(self, what: str, path: str, body: dict[str, Any], *,
               as_user: str = "") -> dict[str, Any]:
        """A real object in the run's namespace, recorded for the cleanup."""
        body.setdefault("metadata", {}).setdefault("labels", {})[LABEL] = self.run_id
        made = self.client.ok("POST", path, body, as_user=as_user)
        name = made["metadata"]["name"]
        self.created.append((f"{what} {name}", f"{path}/{name}", made["metadata"]["uid"]))
        return made

    # -- the run ---------------------------------------------------------------------------------

    def run(self) -> None:
        s = self.selected
        self.say(f"contract-live: context {s.context!r} of {s.kubeconfig}: cluster "
                 f"{s.cluster!r} at {s.server} as user {s.user!r}")
        self.say(f"contract-live: namespace {self.namespace} (created now, removed at the end); "
                 "no Node is read or written; no power or firmware command exists here")
        try:
            self.check("setup/no-leftovers-from-earlier-runs", self.no_leftovers)
            self.check("setup/identity", self.identity)
            if not self.check("setup/namespace", self.create_namespace):
                return
            if not self.check("setup/crd", self.ensure_crd):
                return
            if not self.check("setup/rbac", self.create_rbac):
                return
            self.crd_cases()
            self.rbac_cases()
            self.worker_port_cases()
        except Stop as stop:
            self.interrupted = str(stop)
            self.checks.append(Check("interrupted", "failed",
                                     f"{stop} before the checks finished"))
            self.say(f"contract-live: {stop}: stopping, cleaning up")
        finally:
            self.cleaning = True
            self.cleanup()
            self.client.close()

    # -- setup -----------------------------------------------------------------------------------

    def leftovers(self) -> tuple[list[str], list[str]]:
        """(what an earlier run left, its Terminating namespaces with nothing in them)."""
        left, finishing = [], []
        selector = urlencode({"labelSelector": LABEL})
        status, found = self.get(f"/api/v1/namespaces?{selector}")
        expect(status == 200, f"listing namespaces: HTTP {status}: {message_of(found)}")
        for ns in found["items"]:
            name = ns["metadata"]["name"]
            if name == self.namespace and self.cleaning:
                continue
            phase = (ns.get("status") or {}).get("phase")
            objects = namespace_objects(self.get, name)
            if phase == "Terminating" and not objects:
                finishing.append(name)
            else:
                held = f", holding {', '.join(o for o, _, _ in objects)}" if objects else ""
                left.append(f"namespace {name} ({phase}{held})")
        status, crds = self.get(f"{CRD_PATH}?{selector}")
        expect(status == 200, f"listing CRDs: HTTP {status}: {message_of(crds)}")
        left += [f"CustomResourceDefinition {c['metadata']['name']}" for c in crds["items"]]
        return left, finishing

    def no_leftovers(self) -> None:
        left, finishing = self.leftovers()
        if finishing:
            self.say(f"  note: Terminating and empty (the cluster finishes them): "
                     f"{', '.join(finishing)}")
        expect(not left, f"left behind by an earlier run: {'; '.join(left)}")

    def identity(self) -> None:
        status, out = self.client.call(
            "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        if status == 201:
            info = out["status"]["userInfo"]
            self.say(f"contract-live: the server knows this context as {info['username']!r} "
                     f"(groups {', '.join(info.get('groups', []))})")

    def create_namespace(self) -> None:
        body = {"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": self.namespace, "labels": {LABEL: self.run_id}}}
        made = self.client.ok("POST", "/api/v1/namespaces", body)
        self._namespace_uid = made["metadata"]["uid"]
        self.say(f"contract-live: created namespace {self.namespace}")

    def ensure_crd(self) -> None:
        shipped = cases.shipped_crd()
        status, served = self.get(f"{CRD_PATH}/{CRD_NAME}")
        if status == 404:
            body = cases.shipped_crd()
            body["metadata"].setdefault("labels", {})[LABEL] = self.run_id
            self._crd_installing = True
            self.client.may_create_crd = True
            try:
                made = self.client.ok("POST", CRD_PATH, body)
            finally:
                self.client.may_create_crd = False
            self._crd_uid = made["metadata"]["uid"]
            self.crd = "absent: installed from the shipped manifest by this run, removed after"
            self.say(f"contract-live: {CRD_NAME} was absent: installed from the shipped manifest")
            self.checks.append(Check("crd/installed-from-the-shipped-manifest", "passed"))
        else:
            expect(status == 200, f"reading the CRD: HTTP {status}: {message_of(served)}")
            found = differences(shipped, served)
            if found:
                self.crd = (f"present: differs from the contract in {len(found)} field(s); "
                            "reported, not replaced")
                self.checks.append(Check("crd/matches-the-contract", "failed",
                                         "; ".join(found)[:4000]))
                self.say(f"  FAIL crd/matches-the-contract: the installed {CRD_NAME} differs "
                         "(not replaced):")
                for line in found:
                    self.say(f"       {line}")
            else:
                self.crd = "present: matches the contract (left as it was)"
                self.checks.append(Check("crd/matches-the-contract", "passed"))

        def ready() -> bool:
            status, crd = self.get(f"{CRD_PATH}/{CRD_NAME}")
            return status == 200 and established(crd)

        _wait(f"{CRD_NAME} to be Established", ready)
        _wait("HostOperations to be served in the namespace",
              lambda: self.get(hostops(self.namespace))[0] == 200)

    def create_rbac(self) -> None:
        ns = self.namespace
        for sa in (DASHBOARD_SA, WORKER_SA):
            self.create("ServiceAccount", f"/api/v1/namespaces/{ns}/serviceaccounts",
                        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa}})
        roles: list[tuple[str, str, list[Any]]] = []
        for file in DASHBOARD_ROLES:  # the shipped dashboard Roles, rules as shipped
            role = yaml.safe_load((MANIFESTS / file).read_text())
            roles.append((role["metadata"]["name"], DASHBOARD_SA, role["rules"]))
        worker_rules: list[Any] = []
        for doc in yaml.safe_load_all(WORKER_RBAC.read_text()):
            if doc and doc["kind"] in ("ClusterRole", "Role"):
                # the namespaced rights only: the run grants nothing outside its namespace
                worker_rules += [r for r in doc["rules"] if "nodes" not in r["resources"]]
        roles.append((WORKER_SA, WORKER_SA, worker_rules))
        for name, sa, rules in roles:
            self.create("Role", f"{RBAC}/namespaces/{ns}/roles",
                        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                         "metadata": {"name": name}, "rules": rules})
            self.create("RoleBinding", f"{RBAC}/namespaces/{ns}/rolebindings",
                        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                         "metadata": {"name": name},
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                     "name": name},
                         "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]})
        # bindings take effect through the authorizer's informers
        for user, verb, resource, sub in [(self.dashboard, "create", "hostoperations", ""),
                                          (self.dashboard, "create", "secrets", ""),
                                          (self.worker, "patch", "hostoperations", "status"),
                                          (self.worker, "delete", "secrets", "")]:
            group = GROUP if resource == "hostoperations" else ""
            call = self.client.as_identity(user)

            def in_effect(c: cases.Call = call, v: str = verb, r: str = resource,
                          g: str = group, s: str = sub) -> bool:
                return cases.review(c, v, r, g, s, ns)

            _wait(f"{user} to {verb} {resource}", in_effect)

    # -- 5: the CRD's contract, as the dashboard sends it --------------------------------------

    def crd_cases(self) -> None:
        ns = self.namespace
        dash = self.client.as_identity(self.dashboard)
        admin = self.client.as_identity()
        for variant, spec in dashboard_variants():
            self.check(f"crd/admitted/{variant}", cases.admitted, dash, ns, spec, dry_run=True)
        for rule, case, action, change in VIOLATIONS:
            self.check(f"crd/rule{rule}/{case}", cases.rule_rejects, dash, ns, rule, action,
                       change, dry_run=True)
        for name in NODE_NAMES_ADMITTED:
            self.check(f"crd/nodeName-admitted/{_label(name)}", cases.node_name_admitted,
                       dash, ns, name, dry_run=True)
        for name in NODE_NAMES_REJECTED:
            self.check(f"crd/nodeName-rejected/{_label(name)}", cases.node_name_rejected,
                       dash, ns, name, dry_run=True)
        for i, (action, change, expected) in enumerate(REJECTED, 1):
            self.check(f"crd/field-rejected/{i:02d}-{action}-{'-'.join(change)}",
                       cases.field_rejected, dash, ns, action, change, expected, dry_run=True)
        for name in REQUIRED_FIELDS:
            self.check(f"crd/required/{name}", cases.required_field, dash, ns, name,
                       dry_run=True)
        self.check("crd/unknown-field-strict", cases.strict_unknown_field, dash, ns,
                   dry_run=True)
        self.check("crd/unknown-field-pruned", cases.unknown_field_pruned, dash, ns,
                   dry_run=True)
        # rule 1 needs a stored object to change: one real request per action, patched as dry runs
        stored: dict[str, dict[str, Any]] = {}
        for action, change in IMMUTABLE:
            if action not in stored:
                made = self.check(f"crd/immutable/create-{action}", self.create_request,
                                  dashboard_spec(action))
                if not made:
                    continue
                stored[action] = made
            path = hostops(ns, stored[action]["metadata"]["name"])
            for who, call in (("admin", admin), ("dashboard", dash)):
                self.check(f"crd/immutable/{who}/{action}-{'-'.join(change)}", cases.immutable,
                           call, path, change, dry_run=True)
        self.check("crd/immutable/specs-unchanged", self.specs_unchanged, list(stored.values()))
        if "configure-network" in stored:
            self.check("crd/network-confirmation-annotation", self.confirmation_annotation,
                       stored["configure-network"])
        if "reboot" in stored:
            worker = self.client.as_identity(self.worker)
            path = hostops(ns, stored["reboot"]["metadata"]["name"]) + "/status"
            for name, value in STATUS_REJECTED:
                self.check(f"status/rejected/{name}", cases.status_rejected, worker, path, name,
                           value, dry_run=True)

    def create_request(self, spec: dict[str, Any], name: str | None = None) -> dict[str, Any]:
        """A real HostOperation, created as the dashboard creates it."""
        return self.create("HostOperation", hostops(self.namespace),
                           dashboard_object(spec, name, namespace=self.namespace),
                           as_user=self.dashboard)

    def specs_unchanged(self, objects: list[dict[str, Any]]) -> None:
        for obj in objects:
            now = self.client.ok("GET", hostops(self.namespace, obj["metadata"]["name"]),
                                 as_user=self.dashboard)
            expect(now["spec"] == obj["spec"], f"{obj['metadata']['name']}: the spec changed")

    def confirmation_annotation(self, obj: dict[str, Any]) -> None:
        """The dashboard confirms a network trial with an annotation: rule 1 lets it through."""
        patch = {"metadata": {"annotations": {"appliance.magicstick.dev/network-confirmed": "1"}}}
        out = self.client.ok("PATCH", hostops(self.namespace, obj["metadata"]["name"]), patch,
                             MERGE, as_user=self.dashboard)
        expect(out["metadata"].get("annotations", {}).get(
            "appliance.magicstick.dev/network-confirmed") == "1", "annotation not stored")
        expect(out["spec"] == obj["spec"], "the spec changed")

    # -- 4: RBAC, by impersonation -------------------------------------------------------------

    def rbac_cases(self) -> None:
        ns = self.namespace
        dash = self.client.as_identity(self.dashboard)
        worker = self.client.as_identity(self.worker)
        # both dashboard Roles live in the run's one namespace
        grants = {**cases.DASHBOARD_HOSTOPERATIONS, **cases.DASHBOARD_SECRETS}
        for group, resource, sub in cases.DASHBOARD_PROBES:
            for verb in cases.VERBS:
                yes = cases.allowed_by(grants, group, resource, sub, verb)
                self.check(f"rbac/dashboard/{_may(yes)}/{verb}-{resource}{_sub(sub)}", _probe,
                           dash, verb, resource, group, sub, ns, yes)
        for group, resource, sub in cases.CLUSTER_PROBES:
            for verb in cases.VERBS:
                self.check(f"rbac/dashboard/may-not/{verb}-{resource}{_sub(sub)}", _probe, dash,
                           verb, resource, group, sub, "", False)
        for group, resource in grants:
            for verb in sorted(grants[(group, resource)]):
                self.check(f"rbac/dashboard/may-not-elsewhere/{verb}-{resource}@default", _probe,
                           dash, verb, resource, group, "", "default", False)
        # the worker's namespaced rights; with the Secrets in the same namespace, what one
        # namespace allows counts for both
        points: dict[tuple[str, str, str, str], bool] = {}
        for verb, resource, group, sub, where, yes in cases.worker_access(ns, ns):
            if where:
                key = (verb, resource, group, sub)
                points[key] = points.get(key, False) or yes
        for (verb, resource, group, sub), yes in points.items():
            self.check(f"rbac/worker/{_may(yes)}/{verb}-{resource}{_sub(sub)}", _probe, worker,
                       verb, resource, group, sub, ns, yes)
        self.check("rbac/dashboard/real/create-get-list-delete", self.dashboard_lifecycle)
        self.check("rbac/dashboard/real/no-status-write", self.dashboard_no_status)
        self.check("rbac/dashboard/real/network-secret", self.dashboard_secret)
        self.check("rbac/dashboard/real/no-pods-or-exec", self.dashboard_no_pods)
        self.check("rbac/dashboard/real/no-node-patch", self.dashboard_no_nodes)
        self.check("rbac/worker/real/reads-and-status-only", self.worker_requests)
        self.check("rbac/worker/real/network-secret", self.worker_secret)

    def _expect_status(self, expected: int, method: str, path: str, body: Any = None,
                       content_type: str = cases.JSON, *, as_user: str) -> Any:
        status, out = self.client.call(method, path, body, content_type, as_user=as_user)
        who = "dashboard" if as_user == self.dashboard else "worker"
        expect(status == expected, f"{method} {path} as the {who}: expected HTTP {expected}, "
                                   f"got {status}: {message_of(out)[:300]}")
        return out

    def dashboard_lifecycle(self) -> None:
        """A terminal request is replaced by delete with a UID precondition, then create."""
        made = self.create_request(dashboard_spec("reboot"))
        path = hostops(self.namespace, made["metadata"]["name"])
        d = self.dashboard
        self._expect_status(200, "GET", path, as_user=d)
        listed = self._expect_status(200, "GET", hostops(self.namespace), as_user=d)
        expect(made["metadata"]["name"] in [i["metadata"]["name"] for i in listed["items"]],
               "the list lacks the request")
        self._expect_status(409, "DELETE", path, _delete_options("0" * 8 + "-0000-0000-0000-"
                                                                 + "0" * 12), as_user=d)
        self._expect_status(200, "DELETE", path, _delete_options(made["metadata"]["uid"]),
                            as_user=d)
        self._expect_status(404, "GET", path, as_user=d)

    def dashboard_no_status(self) -> None:
        made = self.create_request(dashboard_spec("reboot"))
        path = hostops(self.namespace, made["metadata"]["name"])
        patch = {"status": {"phase": "Succeeded"}}
        self._expect_status(403, "PATCH", path + "/status", patch, MERGE, as_user=self.dashboard)
        # a patch of the main resource is allowed, but a status in it is ignored
        self._expect_status(200, "PATCH", path, patch, MERGE, as_user=self.dashboard)
        now = self._expect_status(200, "GET", path, as_user=self.dashboard)
        expect(not now.get("status"), f"the dashboard wrote a status: {now.get('status')!r}")

    def _secret(self) -> dict[str, Any]:
        name = "host-network-" + hexs(32)
        return self.create("Secret", f"/api/v1/namespaces/{self.namespace}/secrets",
                           cases.network_secret(name, self.namespace), as_user=self.dashboard)

    def dashboard_secret(self) -> None:
        made, d = self._secret(), self.dashboard
        collection = f"/api/v1/namespaces/{self.namespace}/secrets"
        path = f"{collection}/{made['metadata']['name']}"
        self._expect_status(200, "GET", path, as_user=d)
        self._expect_status(403, "GET", collection, as_user=d)  # no list
        self._expect_status(403, "PUT", with_query(path, DRY_RUN), made, as_user=d)  # no update
        self._expect_status(403, "PATCH", with_query(path, DRY_RUN),
                            {"metadata": {"labels": {"x": "y"}}}, MERGE, as_user=d)
        self._expect_status(200, "DELETE", path, _delete_options(made["metadata"]["uid"]),
                            as_user=d)
        self._expect_status(404, "GET", path, as_user=d)

    def dashboard_no_pods(self) -> None:
        pods = f"/api/v1/namespaces/{self.namespace}/pods"
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
               "spec": {"containers": [{"name": "x", "image": "busybox"}]}}
        self._expect_status(403, "POST", with_query(pods, DRY_RUN), pod, as_user=self.dashboard)
        self._expect_status(403, "POST", f"{pods}/absent-{hexs(6)}/exec?command=true",
                            as_user=self.dashboard)

    def dashboard_no_nodes(self) -> None:
        """A dry-run patch of a Node that does not exist: refused before anything is looked up."""
        absent = f"/api/v1/nodes/{self.namespace}-absent"
        patch = {"metadata": {"annotations": {"appliance.magicstick.dev/host-management": "{}"}}}
        self._expect_status(403, "PATCH", with_query(absent, DRY_RUN), patch, MERGE,
                            as_user=self.dashboard)

    def worker_requests(self) -> None:
        made = self.create_request(dashboard_spec("reboot"))
        path, w = hostops(self.namespace, made["metadata"]["name"]), self.worker
        self._expect_status(200, "GET", path, as_user=w)
        self._expect_status(200, "GET", hostops(self.namespace), as_user=w)
        self._expect_status(200, "PATCH", with_query(path + "/status", DRY_RUN),
                            {"status": {"phase": "Accepted"}}, MERGE, as_user=w)
        self._expect_status(403, "POST", with_query(hostops(self.namespace), DRY_RUN),
                            dashboard_object(dashboard_spec("reboot"),
                                             namespace=self.namespace), as_user=w)
        self._expect_status(403, "PATCH", with_query(path, DRY_RUN),
                            {"metadata": {"annotations": {"x": "y"}}}, MERGE, as_user=w)
        self._expect_status(403, "DELETE", with_query(path, DRY_RUN), as_user=w)

    def worker_secret(self) -> None:
        """Read once, deleted with a UID precondition; never created or updated."""
        made, w = self._secret(), self.worker
        collection = f"/api/v1/namespaces/{self.namespace}/secrets"
        path = f"{collection}/{made['metadata']['name']}"
        self._expect_status(200, "GET", path, as_user=w)
        self._expect_status(200, "GET", collection, as_user=w)
        self._expect_status(403, "POST", with_query(collection, DRY_RUN),
                            cases.network_secret("host-network-" + hexs(32), self.namespace),
                            as_user=w)
        self._expect_status(403, "PUT", with_query(path, DRY_RUN), made, as_user=w)
        self._expect_status(200, "DELETE", path, _delete_options(made["metadata"]["uid"]),
                            as_user=w)

    # -- 6: the worker's own Kubernetes port ---------------------------------------------------

    def worker_port_cases(self) -> None:
        port = RealKube(str(self.selected.private_copy), timeout=15)
        # the port's own transport, behind the run's guard and log (kube.py is unchanged)
        port._wire = GuardedTransport(port._transport(), self.client)
        self.reboot_phases(port)
        self.memory_phases(port)

    def write_and_read(self, port: RealKube, obj: dict[str, Any], status: dict[str, Any],
                       resource_version: str | None = None, *, uid: bool = True) -> None:
        name = obj["metadata"]["name"]
        out = port.patch_hostoperation_status(
            self.namespace, name, status, resource_version,
            uid=obj["metadata"]["uid"] if uid else None)
        expect({k: out["status"].get(k) for k in status} == status,
               f"the write answered {out['status']!r}")
        seen = self.client.ok("GET", hostops(self.namespace, name), as_user=self.dashboard)
        expect({k: seen["status"].get(k) for k in status} == status,
               f"the dashboard reads {seen.get('status')!r}")
        expect(seen["spec"] == obj["spec"], "the spec changed")

    def _status(self, obj: dict[str, Any], phase: str, message: str, boot: str, used: int,
                budget: int, **extra: Any) -> dict[str, Any]:
        return {"phase": phase, "message": clip_message(message),
                "requestId": obj["spec"]["requestId"], "startedAt": _now(-5),
                "updatedAt": _now(), "bootId": boot, "rebootsUsed": used,
                "rebootBudget": budget, **extra}

    def reboot_phases(self, port: RealKube) -> None:
        spec = dashboard_spec("reboot")
        name = hostoperation_name(spec["nodeUid"])  # as the dashboard names it
        obj = self.check("worker-port/reboot/created-by-the-dashboard", self.create_request,
                         spec, name)
        if not obj:
            return
        boot0, boot1 = spec["bootId"], "5a1c2b1e-1d6f-4a4e-8f0e-" + hexs(12)
        for i, (phase, message, boot, used) in enumerate([
            ("Accepted", "Accepted: the host restarts once the request is checked.", boot0, 0),
            ("RebootScheduled", "The host restarts in about one minute (an orderly shutdown, "
             "never a reset): save your work.", boot0, 1),
            ("Succeeded", "The host restarted: a new boot was seen.", boot1, 1),
        ], 1):
            self.check(f"worker-port/reboot/{i}-{phase}", self.write_and_read, port, obj,
                       self._status(obj, phase, message, boot, used, 1))
        self.check("worker-port/reboot/clipped-message-is-stored", self.write_and_read, port,
                   obj, {"message": clip_message("The host restarted. " * 400)})
        self.check("worker-port/reboot/stale-resourceVersion-is-a-conflict", self.stale, port,
                   obj)
        self.check("worker-port/reboot/refused-status-is-permanent", self.refused, port, obj)
        self.check("worker-port/reboot/replaced-request-is-a-conflict", self.replaced, port, obj)

    def stale(self, port: RealKube, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        seen = self.client.ok("GET", hostops(self.namespace, name), as_user=self.dashboard)
        rv = seen["metadata"]["resourceVersion"]
        # a write that changes something (a no-op patch keeps the resourceVersion)
        port.patch_hostoperation_status(
            self.namespace, name, {"message": f"The host restarted (checked {hexs(8)})."}, rv)
        try:
            port.patch_hostoperation_status(self.namespace, name, {"phase": "Failed"}, rv)
        except KubeConflictError:
            pass
        else:
            raise AssertionError("a status write at a stale resourceVersion was accepted")
        now = self.client.ok("GET", hostops(self.namespace, name), as_user=self.dashboard)
        expect(now["status"]["phase"] == "Succeeded", f"status now {now['status']!r}")

    def refused(self, port: RealKube, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        for bad in ({"phase": "Exploded"}, {"message": "m" * 2049}):
            try:
                port.patch_hostoperation_status(self.namespace, name, bad,
                                                uid=obj["metadata"]["uid"])
            except KubePermanentError:
                continue
            raise AssertionError(f"the server accepted {str(bad)[:60]}")
        now = self.client.ok("GET", hostops(self.namespace, name), as_user=self.dashboard)
        expect(now["status"]["phase"] == "Succeeded", f"status now {now['status']!r}")

    def replaced(self, port: RealKube, obj: dict[str, Any]) -> None:
        """The dashboard replaces the terminal request; the old one's status cannot land."""
        name, old_uid = obj["metadata"]["name"], obj["metadata"]["uid"]
        path = hostops(self.namespace, name)
        self._expect_status(200, "DELETE", path, _delete_options(old_uid), as_user=self.dashboard)
        new = self.create_request(dashboard_spec("poweroff", nodeUid=obj["spec"]["nodeUid"]),
                                  name)
        try:
            port.patch_hostoperation_status(self.namespace, name, {"phase": "Succeeded"},
                                            uid=old_uid)
        except KubeConflictError:
            pass
        else:
            raise AssertionError("a status for the replaced request was written")
        now = self._expect_status(200, "GET", path, as_user=self.dashboard)
        expect(not now.get("status"), f"the new request got a status: {now.get('status')!r}")
        self._expect_status(200, "DELETE", path, _delete_options(new["metadata"]["uid"]),
                            as_user=self.dashboard)
        try:
            port.patch_hostoperation_status(self.namespace, name, {"phase": "Succeeded"},
                                            uid=new["metadata"]["uid"])
        except KubeNotFoundError:
            return
        raise AssertionError("a status for a deleted request was written")

    def memory_phases(self, port: RealKube) -> None:
        """configure-gpu-memory with a carve-out and a dynamic limit: two stages, two reboots."""
        spec = dashboard_spec("configure-gpu-memory")
        obj = self.check("worker-port/gpu-memory/created-by-the-dashboard", self.create_request,
                         spec, hostoperation_name(spec["nodeUid"]))
        if not obj:
            return
        b0, b1, b2 = spec["bootId"], *("5a1c2b1e-1d6f-4a4e-8f0e-" + hexs(12) for _ in "12")
        steps: list[tuple[str, str, str, int, dict[str, Any]]] = [
            ("Accepted", "Accepted: carve-out 1 and a dynamic limit of 65536 MiB.", b0, 0, {}),
            ("Preparing", "Writing the firmware memory choice 1.", b0, 0, {"stage": "uma"}),
            ("RebootScheduled", "Restarting in about one minute for the firmware memory choice.",
             b0, 1, {"stage": "uma"}),
            ("Verifying", "Checking the carve-out after the restart.", b1, 1, {"stage": "uma"}),
            ("Preparing", "Writing the dynamic limit.", b1, 1, {"stage": "ttm"}),
            ("RebootScheduled", "Restarting in about one minute for the dynamic limit.", b1, 2,
             {"stage": "ttm"}),
            ("Verifying", "Checking the dynamic limit after the restart.", b2, 2,
             {"stage": "ttm"}),
            ("Succeeded", "Carve-out 1 and a dynamic limit of 65536 MiB are active.", b2, 2, {}),
        ]
        for i, (phase, message, boot, used, extra) in enumerate(steps, 1):
            status = self._status(obj, phase, message, boot, used, 2, **extra)
            if extra.get("stage") == "ttm":  # the second stage: the resourceVersion read last
                seen = self.client.ok("GET", hostops(self.namespace, obj["metadata"]["name"]),
                                      as_user=self.dashboard)
                self.check(f"worker-port/gpu-memory/{i}-{phase}-{extra['stage']}",
                           self.write_and_read, port, obj, status,
                           seen["metadata"]["resourceVersion"], uid=False)
            else:
                stage = f"-{extra['stage']}" if extra else ""
                self.check(f"worker-port/gpu-memory/{i}-{phase}{stage}", self.write_and_read,
                           port, obj, status)

    # -- 7: cleanup ----------------------------------------------------------------------------

    def cleanup(self) -> None:
        self.check("cleanup/created-objects", self.delete_created)
        self.check("cleanup/namespace", self.delete_namespace)
        if self._crd_installing:
            self.check("cleanup/crd", self.delete_crd)
        self.check("cleanup/nothing-left-behind", self.nothing_left)

    def delete_created(self) -> None:
        failed: list[str] = []

        def delete(what: str, path: str, uid: str) -> None:
            try:
                status, out = self.client.call("DELETE", path, _delete_options(uid))
            except Exception as exc:  # the next one is tried all the same
                failed.append(f"{what}: {type(exc).__name__}: {exc}")
                return
            if status not in (200, 202, 404):
                failed.append(f"{what}: HTTP {status}: {message_of(out)[:200]}")

        for what, path, uid in reversed(self.created):
            delete(what, path, uid)
        # anything else in the run's own namespace (a create cut short by a signal)
        if self._namespace_uid or self.namespace_is_ours():
            for what, path, uid in namespace_objects(self.get, self.namespace):
                delete(what, path, uid)
        expect(not failed, "not deleted: " + "; ".join(failed))

    def namespace_is_ours(self) -> bool:
        status, ns = self.get(f"/api/v1/namespaces/{self.namespace}")
        if status == 200 and ns["metadata"].get("labels", {}).get(LABEL) == self.run_id:
            self._namespace_uid = ns["metadata"]["uid"]
            return True
        return False

    def delete_namespace(self) -> None:
        """Deleted, never force-finalized: the cluster's namespace controller finishes it."""
        if not (self._namespace_uid or self.namespace_is_ours()):
            return  # never created
        status, out = self.client.call("DELETE", f"/api/v1/namespaces/{self.namespace}",
                                       _delete_options(self._namespace_uid))
        expect(status in (200, 202, 404), f"HTTP {status}: {message_of(out)[:300]}")

    def delete_crd(self) -> None:
        status, crd = self.get(f"{CRD_PATH}/{CRD_NAME}")
        if status == 404:
            return
        expect(status == 200, f"reading the CRD: HTTP {status}")
        if crd["metadata"].get("labels", {}).get(LABEL) != self.run_id:
            raise AssertionError("the CRD now installed is not the one this run installed: "
                                 "left in place")
        uid = crd["metadata"]["uid"]
        status, objects = self.get(f"/apis/{GROUP}/{VERSION}/hostoperations")
        others = [f"{o['metadata']['namespace']}/{o['metadata']['name']}"
                  for o in (objects or {}).get("items", [])] if status == 200 else []
        expect(not others, f"the CRD this run installed now holds HostOperations of others "
                           f"({', '.join(others)}): left in place")
        self.client.may_delete_crd = True
        try:
            status, out = self.client.call("DELETE", f"{CRD_PATH}/{CRD_NAME}",
                                           _delete_options(uid))
        finally:
            self.client.may_delete_crd = False
        expect(status in (200, 202, 404), f"HTTP {status}: {message_of(out)[:300]}")
        _wait(f"{CRD_NAME} to be gone", lambda: self.get(f"{CRD_PATH}/{CRD_NAME}")[0] == 404)

    def nothing_left(self) -> None:
        left = []
        for what, path, _ in self.created:
            if self.get(path)[0] != 404:
                left.append(what)
        status, ns = self.get(f"/api/v1/namespaces/{self.namespace}")
        if status == 200:
            phase = (ns.get("status") or {}).get("phase")
            inside = [o for o, _, _ in namespace_objects(self.get, self.namespace)]
            if phase != "Terminating" or inside:
                left.append(f"namespace {self.namespace} ({phase}; holding {inside})")
            else:
                self.say(f"contract-live: namespace {self.namespace} is Terminating with "
                         "nothing in it (the cluster's namespace controller removes it)")
        if self._crd_installing and self.get(f"{CRD_PATH}/{CRD_NAME}")[0] != 404:
            left.append(f"CustomResourceDefinition {CRD_NAME}")
        expect(not left, f"left behind: {'; '.join(left)}")

    # -- the summary ---------------------------------------------------------------------------

    def summary(self, watch: dict[str, int]) -> dict[str, Any]:
        failed = [c for c in self.checks if c.result != "passed"]
        return {
            "result": "passed" if self.checks and not failed else "failed",
            "passed": len(self.checks) - len(failed),
            "failed": len(failed),
            "context": self.selected.context,
            "server": self.selected.server,
            "namespace": self.namespace,
            "crd": self.crd,
            "interrupted": self.interrupted or None,
            "realPowerCommands": watch.get("power", 0),
            "realFirmwareWrites": watch.get("firmware", 0),
            "processesStarted": watch.get("processes", 0),
            "nodesModified": self.client.nodes_modified(),
            "requestsSent": len(self.client.log),
            "checks": [{"name": c.name, "result": c.result, **({"detail": c.detail}
                                                               if c.detail else {})}
                       for c in self.checks],
        }


def _probe(call: Any, verb: str, resource: str, group: str, sub: str, namespace: str,
           expected: bool) -> None:
    got = cases.review(call, verb, resource, group, sub, namespace)
    expect(got is expected, f"the authorizer says {'yes' if got else 'no'}")


def _may(yes: bool) -> str:
    return "may" if yes else "may-not"


def _sub(sub: str) -> str:
    return f"/{sub}" if sub else ""


def _label(name: str) -> str:
    if len(name) > 24:
        return f"{name[0]!r}x{len(name)}"
    return repr(name)
