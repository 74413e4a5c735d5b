"""prepare-gpu intake against real plans, played the way the dashboard uses them.

The dashboard offers the plan when `plan.state` is available/ready, and the experiment when
`plan.experiment.state` is available/ready; it sends the id it showed and `allowExperimental`
from that document's `experimental` (contract.md, "The host report"). Every request it can
send this way is accepted; anything else is rejected before a side effect.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.intake import review_request
from magicstick_host.domain.limits import DEFAULT_LIMITS
from magicstick_host.domain.plan.planner import plan_preparation
from magicstick_host.domain.request import Accepted, HostFacts, Rejected, Review
from magicstick_host.domain.state import State
from tests.domain.builders import host, nvidia, other_gpu, ready_host, shipped_profiles, strix

PROFILES = shipped_profiles()
NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
CREATED = "2026-11-30T12:00:00Z"
NODE_UID = "6a1b2c3d-0000-4000-8000-00000000aaaa"
SECOND_AMD = other_gpu("1002", "7550", driver="amdgpu")
OFFERED = ("available", "ready")

HOSTS: dict[str, Evidence] = {
    "single, old kernel": host(),
    "single, ready": ready_host(),
    "single, driver failing": ready_host(dev_kfd=False),
    "nvidia, old kernel": host(devices=(strix(), nvidia())),
    "nvidia, ready": ready_host(devices=(strix(), nvidia())),
    "nvidia unbound, ready": ready_host(devices=(strix(), nvidia(driver=None))),
    "second amd, old kernel": host(devices=(strix(), SECOND_AMD)),
    "second amd, ready": ready_host(devices=(strix(), nvidia(), SECOND_AMD)),
    "no strix halo": host(devices=(nvidia(),)),
}


def _facts(ev: Evidence) -> HostFacts:
    assert ev.boot_id is not None
    return HostFacts(
        node_name="strix-01",
        node_uid=NODE_UID,
        boot_id=ev.boot_id,
        now=NOW,
        shutdown_scheduled=False,
        capabilities={
            "plan": plan_preparation(ev, PROFILES).to_json(),
            "gpuMemory": {"supported": False, "id": "c" * 64},
        },
    )


def _review(facts: HostFacts, **spec: Any) -> Review:
    obj = {
        "metadata": {"uid": "req-uid", "name": "host-x", "creationTimestamp": CREATED},
        "spec": {
            "action": "prepare-gpu",
            "nodeName": "strix-01",
            "nodeUid": NODE_UID,
            "bootId": facts.boot_id,
            "requestId": "0123456789abcdef0123456789abcdef",
            "acknowledgeDisruption": True,
            "actorHash": "d" * 64,
            **spec,
        },
    }
    return review_request(obj, State(), facts, DEFAULT_LIMITS)


def _dashboard_requests(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The prepare-gpu requests the dashboard's own checks let an administrator send."""
    offered = []
    if plan["state"] in OFFERED:
        offered.append(
            {
                "planId": plan["id"],
                "allowExperimental": plan["experimental"],
                "experimentMode": False,
            }
        )
    experiment = plan.get("experiment")
    if experiment is not None and experiment["state"] in OFFERED:
        offered.append(
            {
                "planId": experiment["id"],
                "allowExperimental": experiment["experimental"],
                "experimentMode": True,
            }
        )
    return offered


@pytest.mark.parametrize("name", sorted(HOSTS))
def test_every_request_the_dashboard_offers_is_accepted(name: str) -> None:
    facts = _facts(HOSTS[name])
    for spec in _dashboard_requests(facts.capabilities["plan"]):
        review = _review(facts, **spec)
        assert isinstance(review, Accepted), (spec, review)
        assert review.experiment is spec["experimentMode"]
        assert review.plan_id == spec["planId"]


# host: (plan offered, experiment offered)
OFFERS = {
    "single, old kernel": (True, False),
    "single, ready": (True, False),
    "single, driver failing": (False, False),
    "nvidia, old kernel": (False, True),
    "nvidia, ready": (True, False),
    "nvidia unbound, ready": (True, False),
    "second amd, old kernel": (False, True),
    "second amd, ready": (False, True),
    "no strix halo": (False, False),
}


@pytest.mark.parametrize("name", sorted(HOSTS))
def test_what_the_dashboard_offers_per_host(name: str) -> None:
    offered = _dashboard_requests(_facts(HOSTS[name]).capabilities["plan"])
    modes = {spec["experimentMode"] for spec in offered}
    assert (False in modes, True in modes) == OFFERS[name]


@pytest.mark.parametrize("name", sorted(HOSTS))
def test_what_the_dashboard_does_not_offer_is_rejected(name: str) -> None:
    facts = _facts(HOSTS[name])
    plan = facts.capabilities["plan"]
    experiment = plan.get("experiment")
    if plan["state"] not in OFFERED:
        review = _review(facts, planId=plan["id"], allowExperimental=True, experimentMode=False)
        assert isinstance(review, Rejected) and plan["state"] in review.message
    if experiment is None:
        review = _review(facts, planId=plan["id"], allowExperimental=True, experimentMode=True)
        assert isinstance(review, Rejected) and "offers no experiment" in review.message
    else:
        # the plan's id in experiment mode, or the experiment's id outside it
        for spec in (
            {"planId": plan["id"], "allowExperimental": True, "experimentMode": True},
            {"planId": experiment["id"], "allowExperimental": True, "experimentMode": False},
        ):
            review = _review(facts, **spec)
            assert isinstance(review, Rejected) and "plan id differs" in review.message


def test_an_experiment_that_is_not_offered_is_rejected() -> None:
    facts = _facts(HOSTS["nvidia, old kernel"])
    experiment = facts.capabilities["plan"]["experiment"]
    for state in ("blocked", "not-required", None):
        withdrawn = {**facts.capabilities["plan"], "experiment": {**experiment, "state": state}}
        review = _review(
            replace(facts, capabilities={**facts.capabilities, "plan": withdrawn}),
            planId=experiment["id"],
            allowExperimental=True,
            experimentMode=True,
        )
        assert isinstance(review, Rejected) and f"The experiment is {state}" in review.message


def test_an_experiment_without_allow_experimental_is_rejected() -> None:
    facts = _facts(HOSTS["second amd, ready"])
    experiment = facts.capabilities["plan"]["experiment"]
    review = _review(facts, planId=experiment["id"], allowExperimental=False, experimentMode=True)
    assert isinstance(review, Rejected) and "allowExperimental" in review.message


def test_an_experimental_plan_without_allow_experimental_is_rejected() -> None:
    facts = _facts(HOSTS["nvidia, ready"])
    assert facts.capabilities["plan"]["experimental"] is True
    review = _review(
        facts,
        planId=facts.capabilities["plan"]["id"],
        allowExperimental=False,
        experimentMode=False,
    )
    assert isinstance(review, Rejected) and "experimental" in review.message
