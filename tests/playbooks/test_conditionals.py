"""Every conditional of every shipped playbook is a boolean, on every ansible-core line the
appliances run (convergence.md): Ubuntu 24.04's 2.16 and 26.04's strict line (2.19 refuses a
conditional whose result is not a boolean: "Conditionals must have a boolean result").

Two ways, because a conditional that is non-boolean only on some path (an empty list on a first
run that changed nothing) slips past any run that never takes that path:
- statically: each `when`, `changed_when`, `failed_when`, `until` and assert `that` of
  playbooks/ parses (Jinja2) to an expression that is boolean by construction: a comparison, a
  test (`is defined`, `is changed`, ...), `| bool`, `not`, a boolean literal, or `and`/`or`/`if`
  of such expressions. A bare variable, an attribute, a call or another filter is refused, so
  `_nvidia_reboot_for | length > 0`, never `_nvidia_reboot_for`;
- at run time: the tests' ansible runs with ALLOW_BROKEN_CONDITIONALS off (tests/playbooks/
  conftest.py), so a non-boolean fails under 2.16 as it does under 2.19; proven below on a tiny
  playbook with this venv's ansible-core (`make test` runs it under both lines).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml
from jinja2 import nodes

from tests.playbooks.conftest import PLAYBOOKS, output, run_playbook

CONDITION_KEYS = ("when", "changed_when", "failed_when", "until")
ASSERT_MODULES = ("ansible.builtin.assert", "assert")
NESTED = ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers")
_ENV = jinja2.Environment()


def playbook_files() -> list[Path]:
    """The plays and every task/handler file of their roles."""
    found = sorted(PLAYBOOKS.glob("*.yml"))
    for kind in ("tasks", "handlers"):
        found += sorted(PLAYBOOKS.glob(f"roles/*/{kind}/*.yml"))
    return found


def _tasks(items: Any) -> Iterator[dict[str, Any]]:
    for item in items or []:
        if not isinstance(item, dict):
            continue
        yield item
        for key in NESTED:
            if isinstance(item.get(key), list):
                yield from _tasks(item[key])


def conditionals(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, conditional) for every conditional in a playbook or task file."""
    for task in _tasks(yaml.safe_load(path.read_text(encoding="utf-8"))):
        name = f"{path.relative_to(PLAYBOOKS)}: {task.get('name', '?')}"
        for key in CONDITION_KEYS:
            if key in task:
                values = task[key] if isinstance(task[key], list) else [task[key]]
                for value in values:
                    yield f"{name} ({key})", value
        for module in ASSERT_MODULES:
            that = (task.get(module) or {}).get("that") if isinstance(task.get(module),
                                                                      dict) else None
            if that is not None:
                for value in that if isinstance(that, list) else [that]:
                    yield f"{name} (assert that)", value


def boolean_by_construction(node: nodes.Node) -> bool:
    if isinstance(node, nodes.Compare | nodes.Test | nodes.Not):
        return True
    if isinstance(node, nodes.Filter):
        return node.name == "bool"
    if isinstance(node, nodes.Const):
        return isinstance(node.value, bool)
    if isinstance(node, nodes.And | nodes.Or):
        return boolean_by_construction(node.left) and boolean_by_construction(node.right)
    if isinstance(node, nodes.CondExpr):
        return node.expr2 is not None and all(
            boolean_by_construction(n) for n in (node.expr1, node.expr2))
    return False


def expression(text: str) -> nodes.Node:
    with warnings.catch_warnings():  # Jinja warns of a regex's \Z in a string
        warnings.simplefilter("ignore", DeprecationWarning)
        template = _ENV.parse("{{ (" + text + ") }}")
    (output_node,) = template.body
    assert isinstance(output_node, nodes.Output)
    (expr,) = output_node.nodes
    return expr


def problems() -> list[str]:
    found = []
    for path in playbook_files():
        for where, value in conditionals(path):
            if isinstance(value, bool):
                continue
            if not isinstance(value, str) or "{{" in value or "{%" in value:
                found.append(f"{where}: {value!r} is not a bare expression")
                continue
            if not boolean_by_construction(expression(value)):
                found.append(f"{where}: {' '.join(value.split())!r} is not boolean by "
                             "construction (use `| bool`, `| length > 0`, a comparison or test)")
    return found


def test_the_scan_finds_the_conditionals() -> None:
    found = [c for path in playbook_files() for c in conditionals(path)]
    assert len(found) > 60  # every play and role, not an empty walk
    where = " ".join(w for w, _ in found)
    for part in ("converge.yml", "reboot.yml", "install/tasks", "prepare/tasks", "memory/tasks",
                 "(assert that)", "(failed_when)", "(changed_when)"):
        assert part in where, part


@pytest.mark.parametrize(("text", "boolean"), [
    ("a | length > 0", True),
    ("a is changed and not b", True),
    ("a | bool", True),
    ("x.y | bool and (z is defined or w == 1)", True),
    ("a and b", False),
    ("a and b | length > 0 and not c", False),
    ("a.startswith('/')", False),
    ("a | default(false)", False),
])
def test_the_rule(text: str, boolean: bool) -> None:
    assert boolean_by_construction(expression(text)) is boolean


def test_every_conditional_is_boolean_by_construction() -> None:
    assert problems() == []


@pytest.mark.real_commands
def test_this_ansible_core_refuses_a_non_boolean_conditional(tmp_path: Path) -> None:
    play = tmp_path / "play.yml"
    play.write_text(yaml.safe_dump([{
        "hosts": "all", "gather_facts": False, "vars": {"reasons": []},
        "tasks": [
            {"name": "A boolean", "ansible.builtin.debug": {"msg": "fine"},
             "when": "reasons | length == 0"},
            {"name": "A list", "ansible.builtin.debug": {"msg": "never"},
             "when": "true and reasons"},
        ],
    }]))
    proc = run_playbook(play, {})
    assert proc.returncode == 2, output(proc)
    assert '"msg": "fine"' in proc.stdout and '"msg": "never"' not in proc.stdout
    assert "Conditional result" in proc.stdout + proc.stderr, output(proc)
    assert "list" in proc.stdout + proc.stderr, output(proc)


def test_both_ansible_core_lines_run_the_playbook_tests() -> None:
    """`make test` runs the playbook tests twice: in the main venv with the newest ansible-core
    (the strict line, 2.19+, as Ubuntu 26.04 has it) and in the archive venv with Ubuntu 24.04's
    line, 2.16 (constraints/ubuntu-24.04.txt), and this venv is one of the two."""
    from ansible.release import __version__ as ansible_core

    constraints = (PLAYBOOKS.parent / "constraints/ubuntu-24.04.txt").read_text()
    pins = [line for line in constraints.splitlines() if line.startswith("ansible-core")]
    assert len(pins) == 1 and pins[0].startswith("ansible-core==2.16."), pins
    makefile = (PLAYBOOKS.parent / "Makefile").read_text()
    archive = makefile[makefile.index("\ntest-archive:"):].split("\n\n")[0]
    assert "tests/playbooks" in archive and "tests/converge" in archive, archive
    line = tuple(int(part) for part in ansible_core.split(".")[:2])
    assert line == (2, 16) or line >= (2, 19), ansible_core
    if line == (2, 16):
        assert ansible_core == pins[0].split("==")[1]
