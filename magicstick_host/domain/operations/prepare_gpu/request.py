"""prepare-gpu at intake: the plan (or its experiment) the administrator reviewed must be the
one this host computes now, in an offered state (operations.md, "Plan rules")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from magicstick_host.domain.limits import Limits
from magicstick_host.domain.operations.offer_rules import OFFERED_PLAN_STATES
from magicstick_host.domain.request import HostFacts, plan_id_problem

if TYPE_CHECKING:
    from typing import Any

def check_request(spec: dict[str, Any], host: HostFacts, limits: Limits) -> str | None:
    """The dashboard offers a plan or its experiment only in an offered state, sends the id it
    showed, and takes `allowExperimental` from the plan's (or experiment's) `experimental`."""
    problem = plan_id_problem(spec)
    if problem is not None:
        return problem
    plan_id = spec["planId"]
    plan: dict[str, Any] = host.capabilities.get("plan") or {}
    if spec["experimentMode"]:
        experiment = plan.get("experiment")
        if not isinstance(experiment, dict):
            return "This host offers no experiment; experiment mode cannot be used."
        if plan_id != experiment.get("id"):
            return (
                "The host changed since the experiment was reviewed (the experiment's plan id "
                "differs); review again."
            )
        if experiment.get("state") not in OFFERED_PLAN_STATES:
            return f"The experiment is {experiment.get('state')}: {experiment.get('message')}"
        # an experiment is always experimental, whatever its document says
        if not spec["allowExperimental"]:
            return "This is an experiment and the request does not allow experimental plans."
        return None
    if plan_id != plan.get("id"):
        return "The host changed since the plan was reviewed (the plan id differs); review again."
    if plan.get("state") not in OFFERED_PLAN_STATES:
        return f"The plan is {plan.get('state')}: {plan.get('message')}"
    if plan.get("experimental") and not spec["allowExperimental"]:
        return "This plan is experimental and the request does not allow experimental plans."
    return None
