"""The Kubernetes port: what the tick asks of the cluster, bounded in time.

`KubePort` is what the tick needs; `RealKube` implements it, built from a kubeconfig path (in
production the node's local K3s admin kubeconfig). Every call:
- returns plain JSON-like dicts (never client model objects), decoded within bounds, and an
  object read by GET only when its metadata, spec and status are well formed (kube_answers.py:
  else KubeUnreadableError, "cannot tell");
- maps failures onto the taxonomy: timeouts, connection errors, 429 and 5xx KubeTemporaryError;
  404 KubeNotFoundError; 409 KubeConflictError; other 4xx KubePermanentError; an unusable
  kubeconfig KubeConfigError (bad input);
- finishes, or fails with KubeTemporaryError, within min(its own timeout, what remains of every
  budget it runs under), counting connect, the TLS handshake, the headers and the body: a server
  that drips one byte every 2 s is cut off like one that never answers.

Budgets bound the Kubernetes time of a tick and of its phases:
- `RealKube(..., budget_s=30)`: all the instance sends (the composition root makes one a tick);
- `with kube.budget(seconds):` bounds the calls made inside, e.g. the reads before the local
  step, so that the step never waits long on Kubernetes; what they spend also counts against
  the enclosing budgets, and a budget can only narrow what encloses it;
- `with kube.budget(seconds, apart=True):` bounds the calls inside on their own, outside every
  enclosing budget: the report heartbeat while a playbook holds the maintenance lock.
A budget counts the time spent inside calls; a call whose budget is used up fails at once
with KubeTemporaryError, without being sent.

Two transports carry the calls, with the same answers and errors: the lean one (kube_http.py,
the standard library's socket and ssl) for the kubeconfigs it understands (client
certificate, bearer token, CA, insecure-skip-tls-verify: kubeconfig.py), and the official
client (kube_official.py, imported only then) for the rest (exec plugins, auth providers, ...).
Adding a call is one method on RealKube (and its line on KubePort) over `_request`.

Preconditions, as checked against the real kube-apiserver 1.36 (tests/contract): a merge
patch's `metadata.resourceVersion` gives 409 when the object changed, also through the status
subresource; `metadata.uid` in a patch of the Node gives 422 "field is immutable" (mapped to
KubeConflictError); in a patch of the *status subresource* it is silently ignored (and a
JSON-patch `test` fails with an anonymous 422), so a status patch with a UID precondition reads
the object, compares its UID (from a well-formed answer only: kube_answers.identity) and
patches with that resourceVersion (retrying if only the resourceVersion moved).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Protocol
from urllib.parse import quote

from magicstick_host.domain.cluster import hostoperation_name
from magicstick_host.errors import (
    KubeConfigError,
    KubeConflictError,
    KubeNotFoundError,
    KubeTemporaryError,
)
from magicstick_host.lite_dataclasses import dataclass
from magicstick_host.ports.command_memo import CommandMemo
from magicstick_host.ports.kube_answers import (
    api_message,
    checked_object,
    decode_answer,
    error_for,
    identity,
)
from magicstick_host.ports.kube_lists import list_or_none
from magicstick_host.ports.kube_secrets import NetworkSecrets, NetworkSecretsPort
from magicstick_host.ports.kubeconfig import load_kubeconfig

if TYPE_CHECKING:
    from typing import Any

    from magicstick_host.ports.kube_transport import Transport

GROUP = "appliance.magicstick.dev"
VERSION = "v1alpha1"
HOSTOPERATIONS = "hostoperations"
MODULEACTIVATIONS = "moduleactivations"
MERGE_PATCH = "application/merge-patch+json"
JSON = "application/json"
# a list of the objects' metadata only (ports/kube_lists.py reads one when a page is unreadable)
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

if TYPE_CHECKING:
    Json = dict[str, Any]
__all__ = ["KubePort", "RealKube", "error_for", "hostoperation_name"]


class KubePort(NetworkSecretsPort, Protocol):
    def budget(self, seconds: float, *, apart: bool = False) -> AbstractContextManager[None]:
        """Bound the calls made inside (see the module docstring)."""
        ...

    def read_node(self, name: str) -> Json: ...

    def patch_node_annotation(self, name: str, uid: str, key: str, value: str) -> Json: ...

    def get_hostoperation(self, namespace: str, name: str) -> Json | None: ...

    def patch_hostoperation_status(
        self,
        namespace: str,
        name: str,
        status: Json,
        resource_version: str | None = None,
        *,
        uid: str | None = None,
    ) -> Json: ...

    def get_object(
        self, api_version: str, plural: str, namespace: str, name: str
    ) -> Json | None:
        """Any object by API version and plural ("" namespace: cluster-scoped); None: 404."""
        ...

    def get_module_activation(self, namespace: str, name: str) -> Json | None: ...

    def serves(self, group_version: str, plural: str) -> bool:
        """Whether the cluster serves this resource at all (a CRD may be missing)."""
        ...

    def create_module_activation(self, namespace: str, body: Json) -> Json: ...

    def patch_module_activation(
        self, namespace: str, name: str, spec: Json, resource_version: str
    ) -> Json: ...

    # -- model-cache blockers: every object of all namespaces; None: the cluster has no such
    def list_objects(self, api_version: str, plural: str) -> list[Json] | None: ...


def _seg(value: str) -> str:
    return quote(value, safe="")


def _custom_path(namespace: str, plural: str, name: str | None = None) -> str:
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{_seg(namespace)}/{plural}"
    return path if name is None else f"{path}/{_seg(name)}"


@dataclass
class _Budget:
    seconds: float
    spent: float = 0.0

    @property
    def left(self) -> float:
        return self.seconds - self.spent


TRANSPORTS = ("auto", "lean", "official")


class RealKube(NetworkSecrets):
    """KubePort over HTTPS. The kubeconfig is read on first use.

    `timeout` bounds each call; `budget_s`, when given, all calls of this instance together.
    `transport` is "auto" (the lean one when it can serve the kubeconfig, else the official
    client), or "lean" / "official" to insist (tests run the contract on both).
    `kubeconfig_memo` remembers the parsed kubeconfig by its bytes (ports/command_memo.py).
    """

    def __init__(self, kubeconfig: str, timeout: float = 10.0, *, budget_s: float | None = None,
                 transport: str = "auto", kubeconfig_memo: CommandMemo | None = None) -> None:
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {TRANSPORTS}, not {transport!r}")
        self.kubeconfig = kubeconfig
        self.timeout = timeout
        self.transport = transport
        self.kubeconfig_memo = kubeconfig_memo
        self._wire: Transport | None = None
        self._budgets: list[_Budget] = [] if budget_s is None else [_Budget(budget_s)]

    # -- budgets ----------------------------------------------------------------------------

    @contextmanager
    def budget(self, seconds: float, *, apart: bool = False) -> Iterator[None]:
        enclosing = self._budgets
        self._budgets = [*([] if apart else enclosing), _Budget(seconds)]
        try:
            yield
        finally:
            self._budgets = enclosing

    def _allowed(self, what: str) -> tuple[float, str]:
        """The seconds this call may take, and a note when a budget (not the timeout) bounds it."""
        allowed, note = self.timeout, ""
        for budget in self._budgets:
            if budget.left < allowed:
                allowed = budget.left
                note = f"; {max(allowed, 0):.1f} s were left of a {budget.seconds:g} s budget"
        if allowed <= 0:
            raise KubeTemporaryError(f"{what}: not sent: the Kubernetes time budget is used up")
        return allowed, note

    # -- transport --------------------------------------------------------------------------

    @property
    def transport_name(self) -> str:
        """The transport that serves this kubeconfig: "lean" or "official" (reads it)."""
        return self._transport().name

    def _transport(self) -> Transport:
        if self._wire is None:
            config = load_kubeconfig(self.kubeconfig, self.kubeconfig_memo)
            official = self.transport == "official" or (
                self.transport == "auto" and bool(config.official_only)
            )
            if official:
                from magicstick_host.ports.kube_official import OfficialTransport

                self._wire = OfficialTransport(self.kubeconfig)
            elif config.official_only:
                raise KubeConfigError(
                    f"cannot load kubeconfig {self.kubeconfig}: the lean transport does not "
                    f"serve {', '.join(config.official_only)}"
                )
            else:
                from magicstick_host.ports.kube_http import LeanTransport

                self._wire = LeanTransport(config)
        return self._wire

    def _request(
        self,
        method: str,
        path: str,
        body: Json | None = None,
        content_type: str = JSON,
        query: list[tuple[str, str]] | None = None,
        *,
        uid_precondition: bool = False,
    ) -> Json:
        """One call; its answer a JSON object within the bounds, or KubeUnreadableError."""
        return decode_answer(self._exchange(method, path, body, content_type, query,
                                            uid_precondition=uid_precondition), f"{method} {path}")

    def _exchange(
        self,
        method: str,
        path: str,
        body: Json | None = None,
        content_type: str = JSON,
        query: list[tuple[str, str]] | None = None,
        *,
        uid_precondition: bool = False,
        accept: str = JSON,
    ) -> bytes:
        """One call: the body of a 2xx answer as it came, or the taxonomy's error."""
        what = f"{method} {path}"
        transport = self._transport()
        allowed, note = self._allowed(what)
        charged = list(self._budgets)
        started = time.monotonic()
        try:
            status, raw = transport.request(method, path, query or [], body, content_type,
                                            allowed, accept)
        except KubeTemporaryError as exc:
            raise KubeTemporaryError(f"{what}: {exc}{note}") from exc
        finally:
            for budget in charged:
                budget.spent += time.monotonic() - started
        if 200 <= status <= 299:
            return raw
        text = raw.decode("utf-8", errors="replace")
        if uid_precondition and status == 422 and "metadata.uid" in text:
            raise KubeConflictError(f"{what}: the object's UID is not the expected one "
                                    f"(precondition failed): {api_message(text)}")
        raise error_for(status, what, text)

    def _get_or_none(self, path: str, *, an_object: bool = True) -> Json | None:
        """The answer of a GET, None for 404; `an_object`: an object the worker reasons over,
        checked for its shape (kube_answers.checked_object) as well as decoded."""
        try:
            found = self._request("GET", path)
        except KubeNotFoundError:
            return None
        return checked_object(found, f"GET {path}") if an_object else found

    # -- Nodes ------------------------------------------------------------------------------

    def read_node(self, name: str) -> Json:
        path = f"/api/v1/nodes/{_seg(name)}"
        return checked_object(self._request("GET", path), f"GET {path}")

    def patch_node_annotation(self, name: str, uid: str, key: str, value: str) -> Json:
        """Set one annotation only, if the Node still has this UID (else KubeConflictError)."""
        if not uid:
            raise ValueError("patch_node_annotation needs the Node's UID as a precondition")
        body = {"metadata": {"uid": uid, "annotations": {key: value}}}
        return self._request("PATCH", f"/api/v1/nodes/{_seg(name)}", body, MERGE_PATCH,
                             uid_precondition=True)

    # -- HostOperation ----------------------------------------------------------------------

    def get_hostoperation(self, namespace: str, name: str) -> Json | None:
        return self._get_or_none(_custom_path(namespace, HOSTOPERATIONS, name))

    def patch_hostoperation_status(
        self,
        namespace: str,
        name: str,
        status: Json,
        resource_version: str | None = None,
        *,
        uid: str | None = None,
    ) -> Json:
        """Merge-patch `status` through the status subresource (the spec cannot change there).

        `resource_version` and `uid` are optional preconditions: KubeConflictError when the
        object changed meanwhile or is another object of the same name (deleted and created
        again), KubeNotFoundError when it is gone. Keys set to None in `status` are removed, as
        merge patch does.
        """
        path = _custom_path(namespace, HOSTOPERATIONS, name)
        if not uid:
            return self._patch_status(path, status, resource_version)
        attempts = 1 if resource_version else 3
        with self.budget(self.timeout):  # one call: its reads and patches share its timeout
            for attempt in range(attempts):
                # "replaced" only from a well-formed answer: a garbled one cannot tell
                found_uid, found_rv = identity(self._request("GET", path), f"GET {path}")
                if found_uid != uid:
                    raise KubeConflictError(
                        f"HostOperation {namespace}/{name} has UID {found_uid[:64]!r}, "
                        f"not {uid!r} (deleted and replaced)"
                    )
                rv = resource_version or found_rv
                try:
                    return self._patch_status(path, status, rv)
                except KubeConflictError:
                    if attempt == attempts - 1:
                        raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _patch_status(self, path: str, status: Json, resource_version: str | None) -> Json:
        body: Json = {"status": status}
        if resource_version:
            body["metadata"] = {"resourceVersion": resource_version}
        return self._request("PATCH", path + "/status", body, MERGE_PATCH)

    # -- ModuleActivation -------------------------------------------------------------------

    def get_module_activation(self, namespace: str, name: str) -> Json | None:
        return self._get_or_none(_custom_path(namespace, MODULEACTIVATIONS, name))

    def create_module_activation(self, namespace: str, body: Json) -> Json:
        full = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModuleActivation", **body}
        return self._request("POST", _custom_path(namespace, MODULEACTIVATIONS), full)

    def patch_module_activation(
        self, namespace: str, name: str, spec: Json, resource_version: str
    ) -> Json:
        """Merge-patch the spec, only if the object is still at `resource_version`."""
        if not resource_version:
            raise ValueError("patch_module_activation needs a resourceVersion precondition")
        body = {"metadata": {"resourceVersion": resource_version}, "spec": spec}
        path = _custom_path(namespace, MODULEACTIVATIONS, name)
        return self._request("PATCH", path, body, MERGE_PATCH)

    # -- any object (the reads operations declare) and discovery ------------------------------

    def get_object(
        self, api_version: str, plural: str, namespace: str, name: str
    ) -> Json | None:
        prefix = "/api/" if "/" not in api_version else "/apis/"
        scope = f"/namespaces/{_seg(namespace)}" if namespace else ""
        return self._get_or_none(f"{prefix}{api_version}{scope}/{plural}/{_seg(name)}")

    def serves(self, group_version: str, plural: str) -> bool:
        """Discovery: a missing group/version or resource means the CRD is not installed."""
        prefix = "/api/" if "/" not in group_version else "/apis/"
        found = self._get_or_none(prefix + group_version, an_object=False)
        resources = (found or {}).get("resources")
        return isinstance(resources, list) and any(
            isinstance(r, dict) and r.get("name") == plural for r in resources
        )

    # -- model-cache blockers (clear-model-cache): paged, ports/kube_lists.py ---------------
    def list_objects(self, api_version: str, plural: str) -> list[Json] | None:
        page = lambda path, query: self._request("GET", path, query=query)  # noqa: E731
        return list_or_none(self, api_version, plural, page, self)

    def metadata_page(self, path: str, query: list[tuple[str, str]]) -> bytes:
        """A list page as PartialObjectMetadataList, undecoded (ports/kube_lists.py)."""
        return self._exchange("GET", path, query=query, accept=METADATA_LIST)

    get_one = _get_or_none  # one object by its path (ports/kube_lists.py); None: 404


