"""The `modelCache` section and the intake rules, as pure functions."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from magicstick_host import schemas
from magicstick_host.domain.model_cache.blockers import Blockers
from magicstick_host.domain.model_cache.capability import (
    BLOCKED_MESSAGE,
    approx_gib,
    clear_request_problem,
    model_cache_id,
    model_cache_section,
    offered,
)
from magicstick_host.domain.model_cache.inventory import (
    CacheEntry,
    CacheInventory,
    RootInventory,
)

GIB = 1024**3
FIELDS = {"supported", "blocked", "reclaimableBytes", "caches", "totalBytes", "freeBytes",
          "message", "id"}


def inventory(hub_models: int = 3 * GIB, problem: str = "",
              hub_identity: tuple[int, int] | None = (2049, 100)) -> CacheInventory:
    hub = RootInventory("huggingface", hub_identity, hub_models + 8192, (
        CacheEntry("models--a", hub_models, True), CacheEntry("token", 4096, False)))
    ollama = RootInventory("ollama", None)
    return CacheInventory((hub, ollama), 500 * GIB, 100 * GIB, problem=problem)


def section(inv: CacheInventory | None = None, blockers: Blockers | None = None) -> dict[str, Any]:
    return model_cache_section(inv or inventory(), blockers or Blockers(), node_uid="uid-1")


def test_offered_section() -> None:
    s = section()
    assert set(s) == FIELDS
    assert s["supported"] is True and s["blocked"] is False
    assert s["reclaimableBytes"] == 3 * GIB
    assert s["caches"] == [
        {"id": "huggingface", "name": "Hugging Face / vLLM", "usedBytes": 3 * GIB + 8192,
         "clearable": True},
        {"id": "ollama", "name": "Ollama", "usedBytes": 0, "clearable": False},
    ]
    assert (s["totalBytes"], s["freeBytes"]) == (500 * GIB, 100 * GIB)
    assert "3.0 GiB" in s["message"] and offered(s)


def test_blocked_section_has_the_fixed_message() -> None:
    s = section(blockers=Blockers(found=("ModelActivation a/b",)))
    assert (s["supported"], s["blocked"], s["message"]) == (True, True, BLOCKED_MESSAGE)
    assert not offered(s)


@pytest.mark.parametrize("why", ["inventory", "workloads"])
def test_untrusted_is_unsupported_and_blocked(why: str) -> None:
    if why == "inventory":
        s = section(inventory(problem="/root is a symbolic link"))
        assert "/root is a symbolic link" in s["message"]
        assert s["reclaimableBytes"] == 0 and not any(c["clearable"] for c in s["caches"])
    else:
        s = section(blockers=Blockers(error="GET /api/v1/pods: HTTP 403: forbidden"))
        assert "cannot be read from Kubernetes" in s["message"]
    assert s["supported"] is False and s["blocked"] is True and not offered(s)


def test_empty_is_supported_but_not_offered() -> None:
    s = section(inventory(hub_models=0))
    assert s["supported"] is True and s["blocked"] is False and s["reclaimableBytes"] == 0
    assert not offered(s) and "empty" in s["message"]


def test_every_section_fits_the_report_schema() -> None:
    shape = Draft202012Validator(schemas.validator("report").schema["properties"]["modelCache"])
    for s in (section(), section(inventory(problem="x")), section(inventory(hub_models=0)),
              section(blockers=Blockers(found=("a",))), section(blockers=Blockers(error="e"))):
        assert list(shape.iter_errors(s)) == []


def test_the_id_binds_node_and_root_identities_not_content() -> None:
    base = model_cache_id("uid-1", inventory())
    assert model_cache_id("uid-1", inventory(hub_models=GIB)) == base
    assert model_cache_id("uid-2", inventory()) != base
    assert model_cache_id("uid-1", inventory(hub_identity=(2049, 101))) != base
    assert model_cache_id("uid-1", inventory(hub_identity=None)) != base


def request(**over: Any) -> dict[str, Any]:
    spec = {"allowExperimental": False, "experimentMode": False, "planId": section()["id"]}
    spec.update(over)
    return spec


def test_intake_accepts_the_offered_capability() -> None:
    assert clear_request_problem(request(), section()) is None


@pytest.mark.parametrize(("spec", "cap", "expect"), [
    (request(allowExperimental=True), section(), "experimental flags"),
    (request(experimentMode=True), section(), "experimental flags"),
    (request(allowExperimental=1), section(), "experimental flags"),
    (request(planId="0" * 64), section(), "the id differs"),
    (request(), section(inventory(problem="a mount")), "not available"),
    (request(), section(blockers=Blockers(found=("KubeAI Model a/b",))), BLOCKED_MESSAGE),
    (request(), section(inventory(hub_models=0)), "already empty"),
])
def test_intake_rejections(spec: dict[str, Any], cap: dict[str, Any], expect: str) -> None:
    problem = clear_request_problem(spec, cap)
    assert problem is not None and expect in problem


def test_a_blocked_rejection_names_the_blockers() -> None:
    blockers = Blockers(found=("KubeAI Model kubeai/llama",))
    problem = clear_request_problem(request(), section(blockers=blockers), blockers)
    assert problem is not None and "KubeAI Model kubeai/llama" in problem
    assert "Nothing was deleted" in problem


@pytest.mark.parametrize(("n", "text"), [
    (0, "0 GiB"), (1, "less than 0.1 GiB"), (GIB // 10, "0.1 GiB"), (int(12.34 * GIB), "12.3 GiB"),
])
def test_approx_gib(n: int, text: str) -> None:
    assert approx_gib(n) == text


def test_the_id_names_the_xet_root_too_and_its_version() -> None:
    """Issue 25: Xet's chunk cache is a root of the Hugging Face cache; its identity is in the
    id, and the id's version moved to 2 (an id reviewed before cannot match a new one)."""
    from magicstick_host.domain.model_cache import capability as model_cache

    base = inventory()
    xet = RootInventory("huggingface-xet", (2049, 300), 8192, (CacheEntry("logs", 4096, True),))
    with_xet = CacheInventory((base.roots[0], xet, base.roots[1]), 500 * GIB, 100 * GIB)
    assert model_cache_id("uid-1", with_xet) != model_cache_id("uid-1", base)
    assert model_cache.ID_VERSION == 2
    s = section(with_xet)
    # one Hugging Face cache on the dashboard: both roots' sizes, reclaimable the xet entry too
    assert s["caches"][0]["usedBytes"] == 3 * GIB + 8192 + 8192
    assert s["reclaimableBytes"] == 3 * GIB + 4096
