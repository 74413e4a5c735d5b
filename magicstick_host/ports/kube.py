"""The Kubernetes port: the only module that imports `kubernetes`.

`KubePort` is what the tick needs; `RealKube` implements it with the official client, built from
a kubeconfig path (in production the node's local K3s admin kubeconfig). Every call:
- has a timeout (`timeout` seconds, default 10);
- returns plain JSON-like dicts (never client model objects);
- maps failures onto the error taxonomy: timeouts, connection errors, 429 and 5xx are
  KubeTemporaryError; 404 KubeNotFoundError; 409 KubeConflictError; other 4xx
  KubePermanentError.

Preconditions, as checked against the real kube-apiserver 1.36 (tests/contract):
- `metadata.resourceVersion` in a merge patch: 409 when the object changed meanwhile, also
  through the status subresource;
- `metadata.uid` in a merge patch of a main resource (the Node): the patched object's UID would
  change, so the server answers 422 "metadata.uid: ... field is immutable"; mapped to
  KubeConflictError here;
- `metadata.uid` in a patch of the *status subresource* is silently ignored by the server (the
  status strategy copies all metadata from the stored object), and a JSON-patch `test` op fails
  with an anonymous 422. So a status patch with a UID precondition reads the object, compares
  its UID, and patches with that resourceVersion as the precondition (retrying a few times if
  only the resourceVersion moved).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Protocol
from urllib.parse import quote

from magicstick_host.errors import (
    KubeConfigError,
    KubeConflictError,
    KubeNotFoundError,
    KubePermanentError,
    KubeTemporaryError,
)

GROUP = "appliance.magicstick.dev"
VERSION = "v1alpha1"
HOSTOPERATIONS = "hostoperations"
MODULEACTIVATIONS = "moduleactivations"
APPLIANCES = "appliances"
MERGE_PATCH = "application/merge-patch+json"
JSON = "application/json"

Json = dict[str, Any]


def hostoperation_name(node_uid: str) -> str:
    """The HostOperation name for a Node: `host-` + 24 hex of sha256 over the JSON string."""
    digest = hashlib.sha256(json.dumps(node_uid, ensure_ascii=False).encode()).hexdigest()
    return f"host-{digest[:24]}"


class KubePort(Protocol):
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

    def get_module_activation(self, namespace: str, name: str) -> Json | None: ...

    def get_appliance(self, namespace: str, name: str) -> Json | None: ...

    def serves(self, group_version: str, plural: str) -> bool:
        """Whether the cluster serves this resource at all (a CRD may be missing)."""
        ...

    def create_module_activation(self, namespace: str, body: Json) -> Json: ...

    def patch_module_activation(
        self, namespace: str, name: str, spec: Json, resource_version: str
    ) -> Json: ...


def _seg(value: str) -> str:
    return quote(value, safe="")


def _custom_path(namespace: str, plural: str, name: str | None = None) -> str:
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{_seg(namespace)}/{plural}"
    return path if name is None else f"{path}/{_seg(name)}"


def _api_message(body: str) -> str:
    try:
        parsed = json.loads(body)
    except ValueError:
        return body[:500]
    if isinstance(parsed, dict) and isinstance(parsed.get("message"), str):
        return str(parsed["message"])
    return body[:500]


def error_for(status: int, what: str, body: str = "") -> Exception:
    """The taxonomy error for an HTTP status (status 0: no HTTP answer at all)."""
    detail = f"{what}: HTTP {status}: {_api_message(body)}" if status else f"{what}: {body}"
    if status == 0 or status == 429 or status >= 500:
        return KubeTemporaryError(detail)
    if status == 404:
        return KubeNotFoundError(detail)
    if status == 409:
        return KubeConflictError(detail)
    return KubePermanentError(detail)


class RealKube:
    """KubePort on the official client. The kubeconfig is read on first use."""

    def __init__(self, kubeconfig: str, timeout: float = 10.0) -> None:
        self.kubeconfig = kubeconfig
        self.timeout = timeout
        self._client: Any = None

    # -- transport --------------------------------------------------------------------------

    def _api(self) -> Any:
        if self._client is None:
            try:
                from kubernetes import config

                loader: Any = config  # the client's own annotations are partial
                self._client = loader.new_client_from_config(config_file=self.kubeconfig)
            except Exception as exc:  # config errors come in many types
                # one line: YAML errors come with line breaks and carets
                detail = " ".join(str(exc).split())
                raise KubeConfigError(
                    f"cannot load kubeconfig {self.kubeconfig}: {detail}"
                ) from exc
        return self._client

    def _request(
        self,
        method: str,
        path: str,
        body: Json | list[Json] | None = None,
        content_type: str = JSON,
        query: list[tuple[str, str]] | None = None,
        *,
        uid_precondition: bool = False,
    ) -> Json:
        import urllib3
        from kubernetes.client.exceptions import ApiException

        api = self._api()
        what = f"{method} {path}"
        headers = {"Accept": JSON, "Content-Type": content_type}
        try:
            response = self._call(api, method, path, headers, body, query or [])
            raw = response.read() if hasattr(response, "read") else response.data
            status = int(response.status)
        except ApiException as exc:
            # the older client raises for every non-2xx answer; the newer one returns it
            raw = exc.body if isinstance(exc.body, bytes) else str(exc.body or exc.reason).encode()
            status = int(exc.status or 0)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise KubeTemporaryError(f"{what}: {type(exc).__name__}: {exc}") from exc
        text = raw.decode("utf-8", errors="replace") if raw else ""
        if uid_precondition and status == 422 and "metadata.uid" in text:
            raise KubeConflictError(f"{what}: the object's UID is not the expected one "
                                    f"(precondition failed): {_api_message(text)}")
        if not 200 <= status <= 299:
            raise error_for(status, what, text)
        try:
            parsed = json.loads(text) if text else {}
        except ValueError as exc:
            raise KubeTemporaryError(f"{what}: answer is not JSON: {text[:200]!r}") from exc
        if not isinstance(parsed, dict):
            raise KubeTemporaryError(f"{what}: answer is not a JSON object")
        return parsed

    def _call(self, api: Any, method: str, path: str, headers: dict[str, str],
              body: Json | list[Json] | None, query: list[tuple[str, str]]) -> Any:
        """One raw call: the newer (pydantic-era) client on PyPI, or the older one in Ubuntu
        24.04's archive (python3-kubernetes 22.6), whose call_api takes the path directly."""
        if hasattr(api, "param_serialize"):
            _m, url, hdrs, data, _post = api.param_serialize(
                method=method, resource_path=path, query_params=query, header_params=headers,
                body=body, auth_settings=["BearerToken"],
            )
            return api.call_api(method, url, header_params=hdrs, body=data,
                                _request_timeout=self.timeout)
        return api.call_api(
            path, method, path_params={}, query_params=query, header_params=headers,
            body=body, auth_settings=["BearerToken"], _preload_content=False,
            _return_http_data_only=True, _request_timeout=self.timeout,
        )

    def _get_or_none(self, path: str) -> Json | None:
        try:
            return self._request("GET", path)
        except KubeNotFoundError:
            return None

    # -- Nodes ------------------------------------------------------------------------------

    def read_node(self, name: str) -> Json:
        return self._request("GET", f"/api/v1/nodes/{_seg(name)}")

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
        for attempt in range(attempts):
            current = self._request("GET", path)
            meta = current.get("metadata") or {}
            if meta.get("uid") != uid:
                raise KubeConflictError(
                    f"HostOperation {namespace}/{name} has UID {meta.get('uid')!r}, not {uid!r}"
                    " (deleted and replaced)"
                )
            rv = resource_version or str(meta.get("resourceVersion") or "")
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

    # -- Appliance (read only) and discovery ----------------------------------------------------

    def get_appliance(self, namespace: str, name: str) -> Json | None:
        return self._get_or_none(_custom_path(namespace, APPLIANCES, name))

    def serves(self, group_version: str, plural: str) -> bool:
        """Discovery: a missing group/version or resource means the CRD is not installed."""
        prefix = "/api/" if "/" not in group_version else "/apis/"
        found = self._get_or_none(prefix + group_version)
        resources = (found or {}).get("resources")
        return isinstance(resources, list) and any(
            isinstance(r, dict) and r.get("name") == plural for r in resources
        )
