"""Which actions the host offers the dashboard right now (the report's `actions`). Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.operations.offer_rules import OFFERS

if TYPE_CHECKING:
    from typing import Any

    from magicstick_host.domain.operations.offer_rules import Offered

# a capability key: why nothing may start on this host now although no operation is active
# (e.g. a network trial whose request was deleted is still running: network/view.py)
HOST_BUSY = "hostBusy"


def available_actions(
    ev: Evidence, capabilities: Mapping[str, Any], *, operation_active: bool,
    offers: Iterable[tuple[str, Offered]] = OFFERS,
) -> list[str]:
    """The actions whose predicate holds, in the order of `offers`: the kinds' predicates
    without the kinds (operations/offer_rules.py) for inspect, which runs no operation and so
    loads no registry; the tick's published report passes the registry's own (registry.offers),
    which tests/domain/test_operation_registry.py holds to the same list."""
    # one operation at a time, and never on top of someone else's pending shutdown
    if operation_active or ev.services.shutdown_scheduled is not None:
        return []
    if capabilities.get(HOST_BUSY):
        return []
    # every request is checked against the boot ID; without one nothing can be approved
    if ev.boot_id is None:
        return []
    return [action for action, offered in offers if offered(ev, capabilities)]
