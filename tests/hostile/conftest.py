"""Fixtures of the hostile-input suite: the proxy's PKI once per session, and one `Rig` per
case (closed, with its Node deleted, at the end of the case)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hostile.checks import Verdict
from tests.hostile.rig import Pki, Rig
from tests.soak.pki import make_proxy_ca, upstream_of


@pytest.fixture(scope="session")
def hostile_pki(kube: Any, tmp_path_factory: pytest.TempPathFactory) -> Pki:
    work = tmp_path_factory.mktemp("hostile-pki")
    ca, cert, key = make_proxy_ca(work / "proxy")
    worker = kube.server.kubeconfig("worker")
    token = json.loads(worker.read_text())["users"][0]["user"]["token"]
    return Pki(ca=ca, cert=cert, key=key, upstream=upstream_of(worker, work / "upstream"),
               worker_kubeconfig=worker, token=token)


@pytest.fixture
def make_rig(kube: Any, hostile_pki: Pki, tmp_path: Path) -> Iterator[Callable[..., Rig]]:
    rigs: list[Rig] = []

    def make(verdict: Verdict, **kw: Any) -> Rig:
        rig = Rig(kube, hostile_pki, tmp_path / f"rig-{len(rigs)}", verdict, **kw)
        rigs.append(rig)
        return rig

    try:
        yield make
    finally:
        for rig in rigs:
            rig.close()
