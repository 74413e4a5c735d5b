"""The registry and what every operation module must provide (domain/operations/).

- every phase an operation can enter has a decision (read from the phases its modules name),
  and a phase without one stops the operation instead of waiting forever;
- every step an operation runs has an effect;
- the registry, the report schema and the CRD agree on the actions, and offer_rules.py lists
  them with the kinds' own predicates.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from magicstick_host import schemas
from magicstick_host.app import NETWORK_STEPS, step_effects
from magicstick_host.domain.decisions import SetPhase, Situation, Wait
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.limits import DEFAULT_LIMITS
from magicstick_host.domain.operations.decide import decide
from magicstick_host.domain.operations.kind import OperationKind
from magicstick_host.domain.operations.offer_rules import OFFERS
from magicstick_host.domain.operations.registry import (
    FOREIGN_ACTIONS,
    NOT_YET_ACTIONS,
    OPERATIONS,
)
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.records import record_schema
from tests.harness.factories import operation

REPO = Path(__file__).resolve().parents[2]
CRD = REPO / "playbooks/files/manifests/magicstick-host-10-hostoperation-crd.yaml"
BOOT = "11111111-1111-4111-8111-111111111111"


def phases_named(sources: list[str]) -> set[Phase]:
    """Every `Phase.X` the sources mention: the phases their decisions can lead to."""
    named: set[Phase] = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "Phase"
                and node.attr in Phase.__members__
            ):
                named.add(Phase[node.attr])
    return named


def module_files(kind: OperationKind) -> tuple[Path, ...]:
    """The operation's own module, or its package (named after the action)."""
    path = Path(inspect.getfile(sys.modules[kind.classify.__module__]))
    package = kind.action.replace("-", "_")
    return tuple(sorted(path.parent.glob("*.py"))) if path.parent.name == package else (path,)


def module_sources(kind: OperationKind) -> list[str]:
    return [f.read_text(encoding="utf-8") for f in module_files(kind)]


def missing_decisions(kinds: list[OperationKind], sources: list[str]) -> set[Phase]:
    """The non-terminal phases the sources name that none of these operations decides."""
    decided = {phase for kind in kinds for phase in kind.phases}
    return {p for p in phases_named(sources) if not p.terminal} - decided


# the operations of each module (reboot and poweroff share one)
HOMES: dict[tuple[Path, ...], list[OperationKind]] = {}
for _kind in OPERATIONS.values():
    HOMES.setdefault(module_files(_kind), []).append(_kind)


@pytest.mark.parametrize("home", sorted(HOMES), ids=lambda files: files[0].parent.name
                         if len(files) > 1 else files[0].stem)
def test_every_phase_an_operation_enters_has_a_decision(home: tuple[Path, ...]) -> None:
    kinds = HOMES[home]
    sources = [f.read_text(encoding="utf-8") for f in home]
    for kind in kinds:
        assert Phase.ACCEPTED in kind.phases
        assert not any(p.terminal for p in kind.phases), "a terminal phase needs no decision"
    assert len(phases_named(sources)) >= 2, "the check must see the module's phases"
    assert missing_decisions(kinds, sources) == set()


BROKEN = '''
def verified(op, now):
    return SetPhase(Phase.VERIFYING, "moves on")  # and Verifying has no decision
'''


def test_the_check_catches_a_phase_without_a_decision() -> None:
    assert missing_decisions([TOY], [BROKEN]) == {Phase.VERIFYING}


def at(ev: Evidence) -> Situation:
    return Situation(ev=ev, wall=datetime(2026, 11, 30, tzinfo=UTC), boottime=200.0,
                     limits=DEFAULT_LIMITS)


@pytest.mark.parametrize("action", sorted(OPERATIONS))
def test_a_phase_without_a_decision_stops_the_operation_instead_of_waiting(action: str) -> None:
    kind = OPERATIONS[action]
    for phase in Phase:
        if phase.terminal or phase in kind.phases:
            continue
        decision = decide(kind, operation(action, phase, boot_id=BOOT), at(Evidence(boot_id=BOOT)))
        assert isinstance(decision, SetPhase), (phase, decision)
        assert decision.phase == Phase.INTERRUPTED and "no decision" in decision.message
        assert not isinstance(decision, Wait)


@pytest.mark.parametrize("action", sorted(OPERATIONS))
def test_every_step_an_operation_runs_has_an_effect(action: str) -> None:
    kind = OPERATIONS[action]
    effects = set(step_effects())
    assert kind.steps and kind.steps <= effects, sorted(kind.steps - effects)


def test_the_network_steps_the_composition_root_adds_are_the_network_effects() -> None:
    from magicstick_host.network.step_effects import NETWORK_EFFECTS

    assert set(NETWORK_STEPS) == set(NETWORK_EFFECTS)


@pytest.mark.parametrize("action", sorted(OPERATIONS))
def test_every_operation_declares_what_intake_and_the_state_need(action: str) -> None:
    kind = OPERATIONS[action]
    assert kind.action == action
    assert kind.restart_budget >= 0
    assert record_schema(kind.data)["type"] == "object"  # a typed record, schema-checked
    assert kind.legacy is not None  # the original worker ran it: its files may carry it
    assert not kind.request_fields & {"action", "nodeName", "planId"}


def test_the_registry_the_report_schema_and_the_crd_agree_on_the_actions() -> None:
    ours = set(OPERATIONS) | set(NOT_YET_ACTIONS)
    assert not set(OPERATIONS) & set(NOT_YET_ACTIONS) and not ours & set(FOREIGN_ACTIONS)
    report = schemas._document("report")["properties"]["actions"]["items"]["enum"]
    assert set(report) == ours
    crd = yaml.safe_load(CRD.read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert set(spec["properties"]["action"]["enum"]) == ours | set(FOREIGN_ACTIONS)



def test_the_report_offers_each_action_by_its_kinds_own_predicate() -> None:
    """offer_rules.py lists the actions with the predicates the kinds name, so inspect's
    actions need not load the registry."""
    assert dict(OFFERS) == {action: kind.offered for action, kind in OPERATIONS.items()}


@pytest.mark.real_commands  # a fresh interpreter: other tests re-register actions (toy)
def test_offer_rules_lists_the_actions_in_the_registrys_order() -> None:
    """The report's `actions` order, the same from inspect and from the tick."""
    probe = ("from magicstick_host.domain.operations import registry\n"
             "from magicstick_host.domain.operations.offer_rules import OFFERS\n"
             "assert registry.offers() == list(OFFERS), (registry.offers(), OFFERS)\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


# ---- the toy operation: what adding one takes (tests/tick/test_toy_operation.py runs it) -----

toy: ModuleType = __import__("tests.domain.toy_operation", fromlist=["TOY"])
TOY: OperationKind = toy.TOY


def test_the_toy_passes_the_same_checks_as_the_real_operations() -> None:
    assert missing_decisions([TOY], module_sources(TOY)) == set()
    assert TOY.steps <= set(step_effects()) | {toy.TOY_STEP}
