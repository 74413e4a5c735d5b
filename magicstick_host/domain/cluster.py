"""The cluster objects an operation reads, declared as data, and what a tick saw of them. Pure.

An operation module declares its reads (`ClusterRead`); the tick performs them through the
Kubernetes port before the local step (magicstick_host/cluster_reads.py) and hands the result
to the decisions as a `ClusterView`. A read names the object by API version, plural, namespace
and name, so a new operation adds a read without a new port method.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from magicstick_host.domain.phase import Phase
from magicstick_host.lite_dataclasses import dataclass, field

if TYPE_CHECKING:
    from typing import Any

    Json = dict[str, Any]
# the appliance's API group and system namespace (contract.md): HostOperations,
# ModuleActivations and the Appliance live there
APPLIANCE_API = "appliance.magicstick.dev/v1alpha1"
SYSTEM_NAMESPACE = "ai-system"


def hostoperation_name(node_uid: str) -> str:
    """The HostOperation name for a Node: `host-` + 24 hex of sha256 over the JSON string."""
    digest = _sha256_hex(json.dumps(node_uid, ensure_ascii=False).encode())
    return f"host-{digest[:24]}"


@dataclass(frozen=True)
class ClusterRead:
    key: str  # how decisions find the object in ClusterView.objects, e.g. "module-activation"
    api_version: str  # e.g. "appliance.magicstick.dev/v1alpha1"
    plural: str
    namespace: str
    name: str
    # None: at intake of a request for this action and in every phase of its operation;
    # otherwise only while the operation is in one of these phases
    phases: frozenset[Phase] | None = None
    # first ask discovery whether the cluster serves the resource at all (a CRD that may be
    # missing); ClusterView.served says what it answered
    check_served: bool = False

    def wanted(self, phase: Phase | None) -> bool:
        return self.phases is None or (phase is not None and phase in self.phases)


@dataclass(frozen=True)
class ClusterView:
    """What Kubernetes showed this tick. `ok` is False when it could not be asked (then nothing
    that needs it may proceed); `error` says why. `node_missing`: Kubernetes answered, and has
    no Node of the worker's name (then `request` is the active operation's HostOperation)."""

    node: Json | None = None
    node_missing: bool = False
    request: Json | None = None
    objects: Mapping[str, Json | None] = field(default_factory=dict)
    # per read with check_served: whether the resource is served (False: no such CRD)
    served: Mapping[str, bool] = field(default_factory=dict)
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error and self.node is not None

    @property
    def node_uid(self) -> str:
        return str(((self.node or {}).get("metadata") or {}).get("uid", ""))

    def object(self, key: str) -> Json | None:
        return self.objects.get(key)

    def is_served(self, key: str) -> bool | None:
        """True/False as discovery answered; None when it was not asked this tick."""
        return self.served.get(key)


def _sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
