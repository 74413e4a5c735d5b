"""The official `kubernetes` client as a transport, for kubeconfigs the lean one cannot serve.

Exec plugins, auth providers, username/password, proxy-url and unknown keys need it. It is
imported only when such a kubeconfig is used (or a test asks for it): its import alone costs
0.2–0.3 s of CPU. Its timeouts are per socket operation, so each exchange runs on a daemon
thread and the caller stops waiting at the deadline; the abandoned thread ends at its own
socket timeouts, or with the process.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING

from magicstick_host.errors import KubeConfigError, KubeTemporaryError
from magicstick_host.ports.kube_http import MAX_BODY_BYTES

if TYPE_CHECKING:
    from typing import Any


def _bounded_body(response: Any) -> bytes:
    """The answer's body, read no further than the lean transport's limit: the urllib3 answer
    is not preloaded (the older client: `_preload_content=False`; the newer one wraps it in a
    RESTResponse as `.response`), so a hostile 1 GB body is cut, not held in memory."""
    stream = getattr(response, "response", response)
    if not hasattr(stream, "read"):
        data = bytes(getattr(stream, "data", b"") or b"")
    else:
        data = bytes(stream.read(MAX_BODY_BYTES + 1) or b"")
    if len(data) > MAX_BODY_BYTES:
        with contextlib.suppress(Exception):
            stream.release_conn()
        raise KubeTemporaryError(f"the answer is larger than {MAX_BODY_BYTES} bytes")
    return data


class OfficialTransport:
    name = "official"

    def __init__(self, kubeconfig: str) -> None:
        self.kubeconfig = kubeconfig
        self._client: Any = None
        self._lock = threading.Lock()

    def request(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]],
        body: Any,
        content_type: str,
        timeout: float,
        accept: str = "application/json",
    ) -> tuple[int, bytes]:
        outcome: list[Any] = []

        def exchange() -> None:
            try:
                outcome.append(
                    self._exchange(method, path, query, body, content_type, timeout, accept)
                )
            except BaseException as exc:  # handed to the waiting caller
                outcome.append(exc)

        thread = threading.Thread(target=exchange, name="kube-official", daemon=True)
        thread.start()
        thread.join(timeout)
        if not outcome:
            raise KubeTemporaryError(f"no complete answer within {timeout:.1f} s")
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        status, raw = outcome[0]
        return int(status), bytes(raw)

    # -- on the exchange thread ---------------------------------------------------------------

    def _api(self) -> Any:
        # an exec plugin runs while the client loads: that too is under the caller's deadline
        with self._lock:
            if self._client is None:
                try:
                    import warnings

                    import urllib3
                    from kubernetes import config

                    # insecure-skip-tls-verify: one warning per request on stderr otherwise
                    warnings.filterwarnings(
                        "ignore", category=urllib3.exceptions.InsecureRequestWarning
                    )
                    loader: Any = config  # the client's own annotations are partial
                    self._client = loader.new_client_from_config(config_file=self.kubeconfig)
                except Exception as exc:  # config errors come in many types
                    detail = " ".join(str(exc).split())
                    raise KubeConfigError(
                        f"cannot load kubeconfig {self.kubeconfig}: {detail}"
                    ) from exc
            return self._client

    def _exchange(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]],
        body: Any,
        content_type: str,
        timeout: float,
        accept: str,
    ) -> tuple[int, bytes]:
        import urllib3
        from kubernetes.client.exceptions import ApiException

        api = self._api()
        headers = {"Accept": accept, "Content-Type": content_type}
        try:
            response = self._call(api, method, path, headers, body, query, timeout)
            raw = _bounded_body(response)
            status = int(response.status)
        except ApiException as exc:
            # the older client raises for every non-2xx answer; the newer one returns it
            raw = exc.body if isinstance(exc.body, bytes) else str(exc.body or exc.reason).encode()
            status = int(exc.status or 0)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise KubeTemporaryError(f"{type(exc).__name__}: {exc}") from exc
        return status, raw or b""

    @staticmethod
    def _call(api: Any, method: str, path: str, headers: dict[str, str], body: Any,
              query: list[tuple[str, str]], timeout: float) -> Any:
        """One raw call: the newer (pydantic-era) client on PyPI, or the older one in Ubuntu
        24.04's archive (python3-kubernetes 22.6), whose call_api takes the path directly."""
        if hasattr(api, "param_serialize"):
            _m, url, hdrs, data, _post = api.param_serialize(
                method=method, resource_path=path, query_params=query, header_params=headers,
                body=body, auth_settings=["BearerToken"],
            )
            return api.call_api(method, url, header_params=hdrs, body=data,
                                _request_timeout=timeout)
        return api.call_api(
            path, method, path_params={}, query_params=query, header_params=headers,
            body=body, auth_settings=["BearerToken"], _preload_content=False,
            _return_http_data_only=True, _request_timeout=timeout,
        )
