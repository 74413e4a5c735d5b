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

(The lean transport's own HTTP response reader saved under 10% this way, at a median of 9%,
and is gone: the transport reads with http.client.HTTPResponse, issue 26.)
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


SWAPS: dict[str, Callable[[], None]] = {
    "none": lambda: None,  # ours, through the same launcher: what each swap is compared with
    "dataclasses": dataclasses_back,
    "jsonschema": jsonschema_back,
    "click": click_back,
    "kubernetes": kubernetes_back,
    "yaml": yaml_back,
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
