"""A HostOperation request as intake sees it, and what intake decides about it. Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from magicstick_host.domain.canonical import sha256_hex
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.text import clip_message
from magicstick_host.lite_dataclasses import dataclass, field

if TYPE_CHECKING:
    from typing import Any

REQUEST_ID = re.compile(r"^[0-9a-f]{32}$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class HostFacts:
    """What intake checks a request against, all observed on this tick."""

    node_name: str
    node_uid: str
    boot_id: str | None
    now: datetime  # wall, UTC
    shutdown_scheduled: bool
    # this tick's capabilities by report section ("plan", "gpuMemory", ...), and objects an
    # operation's intake rules check against (e.g. the GpuMemoryCapability itself)
    capabilities: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Accepted:
    uid: str
    request_id: str
    action: str
    spec: dict[str, Any]
    digest: str
    plan_id: str
    experiment: bool
    # the end of the request's lifetime: an operation that has not started by then never does
    expires_at: datetime | None = None


@dataclass(frozen=True)
class Rejected:
    uid: str
    request_id: str
    action: str
    message: str


@dataclass(frozen=True)
class Ignored:
    """Not a request to act on: already processed, or finished before our records began."""

    uid: str
    why: str


Review = Accepted | Rejected | Ignored


def request_digest(uid: str, spec: dict[str, Any]) -> str:
    return sha256_hex({"uid": uid, "spec": spec})


def plan_id_problem(spec: dict[str, Any]) -> str | None:
    """For the actions approved against a capability id (contract.md, `planId`)."""
    plan_id = spec.get("planId", "")
    if not isinstance(plan_id, str) or not HEX64.match(plan_id):
        return f"A {spec.get('action')} request needs the 64-hex plan id it was approved against."
    return None


def rejection_status(review: Rejected, *, at: str, boot_id: str) -> dict[str, Any]:
    """The HostOperation status of a rejected request (its message always clipped)."""
    return {
        "phase": str(Phase.REJECTED),
        "message": clip_message(review.message),
        "requestId": review.request_id,
        "startedAt": at,
        "updatedAt": at,
        "bootId": boot_id,
    }
