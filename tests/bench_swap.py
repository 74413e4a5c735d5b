"""The installed command with one of our own parts swapped back for the standard one it stands
in for, for `make bench` (tests/bench.py, "what each part of our own saves").

    python3 -I tests/bench_swap.py CHECKOUT PART ARGS...

runs `magicstick-host ARGS...` as the install's wrapper does, over CHECKOUT, with PART swapped
back before the command's first import of it. architecture.md's "Standard parts first": a part
of our own stays only where it saves at least 10% of the idle tick measured this way.

- dataclasses: magicstick_host.lite_dataclasses is the standard module itself;
- jsonschema: every shipped and record schema is checked by jsonschema's Draft 2020-12
  validator, not the compiled closures of schemas/compiled.py;
- click: the command line is parsed by click, not cli/tick_fast.py;
- kubernetes: the official client serves every kubeconfig, not the lean transport;
- yaml: the kubeconfig (ports/kubeconfig.py) and the shipped profiles (profile_store.py) are
  parsed from their YAML in every process, without the kubeconfig memo or profiles/parsed.json.

- http.client: the lean transport reads each answer with http.client.HTTPResponse over its
  deadline-armed socket's reader, not ports/http_response.py.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def dataclasses_back() -> None:
    import dataclasses

    sys.modules["magicstick_host.lite_dataclasses"] = dataclasses


def jsonschema_back() -> None:
    import magicstick_host.schemas as schemas

    def compile_schema(schema: Any) -> Callable[[Any, tuple[Any, ...]], Any]:
        from jsonschema import Draft202012Validator

        validator = Draft202012Validator(schema)

        def check(value: Any, path: tuple[Any, ...]) -> Any:
            return ((path + tuple(e.absolute_path), e.message)
                    for e in validator.iter_errors(value))

        return check

    schemas.compile_schema = compile_schema  # type: ignore[assignment]
    schemas.compiled_validator.cache_clear()
    # the profiles' and records' checks, bound where they are imported
    import magicstick_host.profile_store as profile_store

    profile_store.compile_schema = compile_schema  # type: ignore[assignment]


def click_back() -> None:
    import magicstick_host.cli.main as main

    main.fast_arguments = lambda args, environ: None  # type: ignore[assignment]


def kubernetes_back() -> None:
    import magicstick_host.ports.kube as kube

    original = kube.RealKube.__init__

    def official(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs["transport"] = "official"
        original(self, *args, **kwargs)

    kube.RealKube.__init__ = official  # type: ignore[method-assign]


def yaml_back() -> None:
    import magicstick_host.ports.kube as kube
    import magicstick_host.profile_store as profile_store

    load_kubeconfig = kube.load_kubeconfig
    kube.load_kubeconfig = lambda path, memo=None: load_kubeconfig(path, None)
    profile_store._shipped_documents = lambda *args: None  # type: ignore[assignment]
    profile_store.recall_document = lambda memo, key: (False, None)  # type: ignore[assignment]
    profile_store.remember_document = lambda memo, key, value: None  # type: ignore[assignment]


def http_client_back() -> None:
    import http.client

    import magicstick_host.ports.kube_http as kube_http
    from magicstick_host.ports.http_response import BadResponse, Response

    class Reader:
        """What HTTPResponse takes for a socket: it only asks for the reader."""

        def __init__(self, stream: Any) -> None:
            self.stream = stream

        def makefile(self, mode: str) -> Any:
            return self.stream

    def read_response(stream: Any, method: str, limit: int) -> Response:
        answer = http.client.HTTPResponse(Reader(stream), method=method)  # type: ignore[arg-type]
        try:
            answer.begin()
            body = answer.read(limit + 1)
        except (http.client.HTTPException, ValueError) as error:
            raise BadResponse(str(error)) from None
        return Response(answer.status, body, not answer.will_close and len(body) <= limit)

    kube_http.read_response = read_response  # type: ignore[assignment]


SWAPS: dict[str, Callable[[], None]] = {
    "none": lambda: None,  # ours, through the same launcher: what each swap is compared with
    "dataclasses": dataclasses_back,
    "jsonschema": jsonschema_back,
    "click": click_back,
    "kubernetes": kubernetes_back,
    "yaml": yaml_back,
    "http.client": http_client_back,
}


# what a swap imports beyond what the command needs (the install's interpreter may lack it)
NEEDS = {"jsonschema": "jsonschema", "click": "click", "kubernetes": "kubernetes"}


def main() -> None:
    checkout, part, *args = sys.argv[1:]
    sys.dont_write_bytecode = True
    sys.path.insert(0, checkout)
    SWAPS[part]()
    sys.argv = [sys.argv[0], *args]
    from magicstick_host.cli.main import entry_point

    entry_point()


if __name__ == "__main__":
    main()
