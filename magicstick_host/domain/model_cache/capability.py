"""The `modelCache` capability of the report and the intake rules of clear-model-cache. Pure.

model-cache.md, "The capability in the report" and "The operation" step 1. The section is
`{supported, blocked, reclaimableBytes, caches: [{id, name, usedBytes, clearable}], totalBytes,
freeBytes, message, id}`:
- an inventory that cannot be trusted, or workloads that cannot be read: `supported: false`,
  `blocked: true`, the reason in `message`;
- any blocker: `blocked: true` and the fixed message the dashboard knows;
- otherwise the cleanup is offered when `reclaimableBytes > 0`.
`clearable` of a cache says whether the cleanup would delete anything in it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.canonical import sha256_hex
from magicstick_host.domain.model_cache.blockers import Blockers
from magicstick_host.domain.model_cache.inventory import (
    CACHE_ROOTS,
    REPORT_CACHES,
    CacheInventory,
)
from magicstick_host.domain.text import clip_message
from magicstick_host.lite_dataclasses import dataclass

if TYPE_CHECKING:
    from typing import Any

ACTION = "clear-model-cache"
# 2: the roots include Xet's chunk cache (huggingface-xet), so a version-1 id never matches
ID_VERSION = 2
BLOCKED_MESSAGE = "Stop local model deployments before clearing shared caches."
GIB = 1024**3


def approx_gib(n_bytes: int) -> str:
    """"12.3 GiB", "0.4 GiB", "less than 0.1 GiB" (never a misleading "0.0")."""
    if n_bytes <= 0:
        return "0 GiB"
    if n_bytes < 0.05 * GIB:
        return "less than 0.1 GiB"
    return f"{n_bytes / GIB:.1f} GiB"


def about_gib(n_bytes: int, *, capital: bool = False) -> str:
    """A size in a sentence, as people say it: "about 2.4 GiB", "less than 0.1 GiB" (never
    "about less than"), "0 GiB"."""
    text = approx_gib(n_bytes)
    if text[0].isdigit() and n_bytes > 0:
        text = f"about {text}"
    return text[:1].upper() + text[1:] if capital else text


def model_cache_id(node_uid: str, inventory: CacheInventory) -> str:
    """Binds a request to this node and these cache directories (not their content)."""
    roots = {}
    for root in inventory.roots:
        roots[root.id] = list(root.identity) if root.identity is not None else "absent"
    return sha256_hex({"kind": "model-cache", "version": ID_VERSION, "node": node_uid,
                       "roots": roots})


def _message(inventory: CacheInventory, blockers: Blockers) -> tuple[bool, bool, str]:
    """(supported, blocked, message)."""
    if not inventory.trusted:
        return False, True, (
            f"The model caches cannot be checked safely: {inventory.problem}. Nothing can be "
            "cleared from the dashboard."
        )
    if blockers.error:
        return False, True, (
            f"The cleanup is not offered: {blockers.summary()}, so it cannot be told whether "
            "a model is using the caches."
        )
    if blockers.found:
        return True, True, BLOCKED_MESSAGE
    reclaimable = inventory.reclaimable_bytes
    if reclaimable <= 0:
        return True, False, "The model caches are empty; there is nothing to clear."
    return True, False, (
        f"{about_gib(reclaimable, capital=True)} of downloaded models can be cleared. Models are "
        "downloaded again when they are next deployed."
    )


def model_cache_section(
    inventory: CacheInventory, blockers: Blockers, *, node_uid: str
) -> dict[str, Any]:
    supported, blocked, message = _message(inventory, blockers)
    caches = []
    for cache_id, name in REPORT_CACHES:
        roots = [inventory.root(spec.id) for spec in CACHE_ROOTS if spec.cache_id == cache_id]
        found = [root for root in roots if root is not None]
        caches.append(
            {
                "id": cache_id,
                "name": name,
                # the walk counted each inode once across all roots, so the roots add up
                "usedBytes": sum(root.used_bytes for root in found),
                "clearable": inventory.trusted and any(root.clearable for root in found),
            }
        )
    return {
        "supported": supported,
        "blocked": blocked,
        "reclaimableBytes": inventory.reclaimable_bytes if inventory.trusted else 0,
        "caches": caches,
        "totalBytes": inventory.total_bytes or 0,
        "freeBytes": inventory.free_bytes or 0,
        "message": clip_message(message),  # it can quote a path or an API's answer
        "id": model_cache_id(node_uid, inventory),
    }


def offered(section: dict[str, Any]) -> bool:
    """Whether the report lists clear-model-cache among the actions."""
    return bool(
        section.get("supported")
        and not section.get("blocked")
        and isinstance(section.get("reclaimableBytes"), int)
        and section["reclaimableBytes"] > 0
    )


def clear_request_problem(
    spec: dict[str, Any], section: dict[str, Any], blockers: Blockers | None = None
) -> str | None:
    """Why a clear-model-cache request must be rejected, or None. `section` is the capability
    computed now, from a fresh walk and fresh workloads (never the cached report's);
    `blockers`, when given, are named in a rejection."""
    if spec.get("allowExperimental") is not False or spec.get("experimentMode") is not False:
        return "A clear-model-cache request must not set the experimental flags."
    if spec.get("planId") != section.get("id"):
        return (
            "The model caches changed since they were reviewed (the id differs); review the "
            "Model cache page again. Nothing was deleted."
        )
    if not section.get("supported"):
        return f"Model cache cleanup is not available: {section.get('message')}"
    if section.get("blocked"):
        named = f" Blocking: {blockers.summary()}." if blockers and blockers.found else ""
        return f"{section.get('message')}{named} Nothing was deleted."
    if not offered(section):
        return "The model caches are already empty; nothing was deleted."
    return None


# the key of this tick's ModelCacheFacts among the Situation's capabilities (and HostFacts')
MODEL_CACHE_FACTS = "model-cache-facts"


@dataclass(frozen=True)
class ModelCacheFacts:
    """What the tick saw of the model caches (magicstick_host/model_cache_reads.py).

    `fresh`: this tick walked the inventory and asked Kubernetes for the workloads itself
    (intake and every step of a cleanup need that); otherwise they are the report's, which may
    be minutes old. A fresh read that failed is `blockers.error` (or the inventory's
    `problem`), never an empty list: the decisions check both.
    `section` is the report's `modelCache` computed from them. `node_uid` is the Node's UID
    its id names: "" when Kubernetes could not be read on this tick, and then the id names no
    Node and cannot be compared with a reviewed one."""

    inventory: CacheInventory
    blockers: Blockers
    section: dict[str, Any]
    fresh: bool
    node_uid: str
