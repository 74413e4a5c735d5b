"""Which actions the host offers the dashboard right now (the report's `actions`). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.operations.offer_rules import OFFERS

if TYPE_CHECKING:
    from typing import Any

# a capability key: why nothing may start on this host now although no operation is active
# (e.g. a network trial whose request was deleted is still running: network/view.py)
HOST_BUSY = "hostBusy"


def available_actions(
    ev: Evidence, capabilities: Mapping[str, Any], *, operation_active: bool
) -> list[str]:
    # one operation at a time, and never on top of someone else's pending shutdown
    if operation_active or ev.services.shutdown_scheduled is not None:
        return []
    if capabilities.get(HOST_BUSY):
        return []
    # every request is checked against the boot ID; without one nothing can be approved
    if ev.boot_id is None:
        return []
    # the kinds' predicates without the kinds (operations/offer_rules.py): the registry loads
    # every operation, which the console's inspect does not run
    return [action for action, offered in OFFERS if offered(ev, capabilities)]
