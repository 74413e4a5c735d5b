"""Reading the original worker's loosely typed values (domain/legacy_state.py). Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any


def nonempty_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def typed(value: Any, *kinds: type) -> bool:
    """JSON type check where a boolean is only a boolean (not an int)."""
    if isinstance(value, bool):
        return bool in kinds
    return isinstance(value, kinds)


def plan_of(current: dict[str, Any]) -> dict[str, Any]:
    plan = current.get("plan")
    return plan if isinstance(plan, dict) else {}
