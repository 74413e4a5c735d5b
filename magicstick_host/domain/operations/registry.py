"""The one list of actions: which operations this worker runs, and which it turns away.

Intake (domain/intake.py), the tick's cluster reads (magicstick_host/cluster_reads.py), the
phase dispatch (operations/decide.py), the effects a step may run, the state loader
(domain/state_codec.py) and the published report's `actions` (`offers`) all look actions up
here. No other module spells an action name but offer_rules.py, which lists them with the
kinds' `offered` predicates for inspect's `actions` (domain/offers.py), so that `inspect`
loads no operation; tests/domain/test_operation_registry.py holds the two lists to each other.
The order is the report's `actions` order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.operations.clear_model_cache import CLEAR_MODEL_CACHE
from magicstick_host.domain.operations.configure_gpu_memory import CONFIGURE_GPU_MEMORY
from magicstick_host.domain.operations.configure_network import CONFIGURE_NETWORK
from magicstick_host.domain.operations.kind import OperationKind
from magicstick_host.domain.operations.prepare_gpu import PREPARE_GPU
from magicstick_host.domain.operations.reboot_poweroff import POWEROFF, REBOOT
from magicstick_host.domain.operations.scan_wifi import SCAN_WIFI
from magicstick_host.domain.records import NoData

if TYPE_CHECKING:
    from magicstick_host.domain.operations.offer_rules import Offered

OPERATIONS: dict[str, OperationKind] = {
    kind.action: kind
    for kind in (PREPARE_GPU, CONFIGURE_GPU_MEMORY, REBOOT, POWEROFF, CLEAR_MODEL_CACHE,
                 CONFIGURE_NETWORK, SCAN_WIFI)
}
# the contract's actions this worker does not run yet: "not available on this host yet"
NOT_YET_ACTIONS: tuple[str, ...] = ()
# other appliance services' actions (contract.md): "not handled by this host worker"
FOREIGN_ACTIONS = (
    "configure-updates",
    "check-updates",
    "install-updates",
    "check-software-channel",
    "apply-software-channel",
)


def offers() -> list[tuple[str, Offered]]:
    """Each registered action with its kind's `offered`, in the report's order (the published
    report's `actions`: domain/offers.py)."""
    return [(action, kind.offered) for action, kind in OPERATIONS.items()]


def kind_of(action: str) -> OperationKind | None:
    return OPERATIONS.get(action)


def data_type(action: str) -> type:
    """The data record of an action; NoData for one this worker does not run (a migrated
    operation of an unknown action is kept only as a finished record)."""
    kind = OPERATIONS.get(action)
    return kind.data if kind is not None else NoData
