"""The soak's action table against the registry: every registered operation is soaked, with the
registry's restart budget and steps, and the table's own checks catch a bad entry."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from magicstick_host.domain.operations.registry import OPERATIONS
from tests.soak.actions import ACTIONS, BY_NAME, SoakAction, check_coverage, effect_steps, listed


def test_every_registered_operation_has_one_entry() -> None:
    assert check_coverage() == []
    assert set(BY_NAME) == set(OPERATIONS)


def test_budget_and_steps_are_the_registrys() -> None:
    for action in ACTIONS:
        assert action.restart_budget == OPERATIONS[action.name].restart_budget
        assert action.steps == OPERATIONS[action.name].steps


def test_a_missing_a_foreign_and_a_doubled_entry_are_named() -> None:
    reboot = BY_NAME["reboot"]
    missing = tuple(a for a in ACTIONS if a.name != "poweroff")
    assert check_coverage(missing) == [
        "poweroff: registered, but tests/soak/actions.py has no entry for it"]
    foreign = (*ACTIONS, replace(reboot, name="configure-updates"))
    assert check_coverage(foreign) == [
        "configure-updates: an entry, but the registry does not run it"]
    assert check_coverage((*ACTIONS, reboot)) == ["reboot: more than one entry"]


def test_an_effect_mapped_to_a_step_the_operation_lacks_is_named() -> None:
    bad = replace(BY_NAME["reboot"], effects={"playbook:prepare.yml": "install-packages"})
    table = tuple(bad if a.name == "reboot" else a for a in ACTIONS)
    assert check_coverage(table) == [
        "reboot: effect 'playbook:prepare.yml' maps to 'install-packages', not a step of it"]


def test_one_effect_is_the_effect_of_one_step() -> None:
    assert effect_steps()["shutdown"] == "schedule-shutdown"
    clash = SoakAction("reboot", 1.0, listed("reboot"), lambda r, g: {},
                       effects={"shutdown": "install-packages"})
    with pytest.raises(ValueError, match="shutdown"):
        effect_steps((*ACTIONS, clash))


def test_listed_offers_what_the_report_lists() -> None:
    offered = listed("clear-model-cache")
    assert offered({"actions": ["reboot", "clear-model-cache"]})
    assert not offered({"actions": ["reboot"]}) and not offered({})
    assert SoakAction("x", 1.0, offered, lambda r, g: {}).spec({}, random.Random(0)) == {}
