"""The layers of architecture.md, checked on the import graph (every import, also the ones inside
functions), so that they stay true when nobody is looking:
- domain/ is pure: no ports, effects, simulator, CLI or tick, and no I/O library;
- effects/ decide nothing: they import no domain module;
- only the composition root (app.py) imports the tick, and only it loads the simulator;
- the CLI never loads the simulator unless a `sim` command or `--executor sim` asks for it.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "magicstick_host"
# I/O, processes, time and the clients of the outside world: a domain module takes their
# results as arguments instead
IO_LIBRARIES = frozenset(
    {
        "os", "sys", "io", "subprocess", "socket", "ssl", "http", "urllib", "urllib3",
        "shutil", "pathlib", "tempfile", "glob", "fcntl", "select", "signal", "pwd", "time",
        "threading", "multiprocessing", "asyncio", "importlib", "kubernetes", "filelock",
        "yaml", "jsonschema", "click",
    }
)  # fmt: skip
DOMAIN_MAY_NOT = ("ports", "effects", "sim", "cli", "collect", "app", "tick", "publish",
                  "cluster_reads", "model_cache_reads", "profile_store", "schemas")  # fmt: skip


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            # `from magicstick_host.domain import plan` imports the module domain.plan
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


GRAPH = {module_name(p): imports_of(p) for p in sorted(PACKAGE.rglob("*.py"))}


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def importers_of(target: str) -> set[str]:
    return {m for m, deps in GRAPH.items() if any(within(d, target) for d in deps)}


def test_the_graph_is_not_empty() -> None:
    """The checks below cannot pass by finding nothing."""
    assert "magicstick_host.domain.operations.registry" in GRAPH
    assert "magicstick_host.tick" in GRAPH["magicstick_host.app"]
    assert len(GRAPH) > 100


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if within(m, "magicstick_host.domain")))
def test_the_domain_is_pure(module: str) -> None:
    deps = GRAPH[module]
    io = sorted(d for d in deps if d.split(".")[0] in IO_LIBRARIES)
    assert io == [], f"{module} imports I/O: {io}"
    layers = sorted(
        d for d in deps for layer in DOMAIN_MAY_NOT if within(d, f"magicstick_host.{layer}")
    )
    assert layers == [], f"{module} imports outside the domain: {layers}"


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if within(m, "magicstick_host.effects")))
def test_effects_import_no_decisions(module: str) -> None:
    domain = sorted(d for d in GRAPH[module] if within(d, "magicstick_host.domain"))
    assert domain == [], f"{module} imports domain modules: {domain}"


def test_only_the_composition_root_imports_the_tick() -> None:
    assert importers_of("magicstick_host.tick") == {"magicstick_host.app"}


def test_publishing_does_not_reach_back_into_the_tick() -> None:
    assert not any(within(d, "magicstick_host.tick") for d in GRAPH["magicstick_host.publish"])


def test_only_the_composition_root_loads_the_simulator() -> None:
    sim = "magicstick_host.sim"
    outside = {m for m in importers_of(sim) if not within(m, sim)}
    assert outside == {"magicstick_host.app"}


PROBE = """
import json, sys
from magicstick_host.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code,
                  "sim": sorted(m for m in sys.modules if m.startswith("magicstick_host.sim"))}))
"""


def loaded_simulator(*argv: str) -> tuple[int, list[str]]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True,
                          timeout=120, check=False, cwd=PACKAGE.parent)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    return doc["code"], doc["sim"]


@pytest.mark.real_commands
def test_the_cli_does_not_load_the_simulator_for_a_real_root(tmp_path: Path) -> None:
    code, sim = loaded_simulator("tick", "--kubeconfig", str(tmp_path / "absent"),
                                 "--state-dir", str(tmp_path / "state"))
    assert code == 0 and sim == []
    code, sim = loaded_simulator("inspect", "--root", str(tmp_path))
    assert code == 0 and sim == []


@pytest.mark.real_commands
def test_a_sim_command_loads_the_simulator() -> None:
    code, sim = loaded_simulator("sim", "list")
    assert code == 0 and "magicstick_host.sim.scenarios" in sim


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: module_name(p))
def test_no_module_is_over_400_lines(path: Path) -> None:
    """Small modules with one job each; split one that grows past this along a real seam."""
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 400


def _imports_typing(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import):
        return any(alias.name == "typing" for alias in node.names)
    return isinstance(node, ast.ImportFrom) and node.module == "typing"


def _typing_imports_at_run_time(tree: ast.Module) -> list[int]:
    """Lines importing typing that the interpreter runs when the module is imported: at module
    level or in a class body, outside an `if TYPE_CHECKING:` block (a function may import it)."""
    found: list[int] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if _imports_typing(node):
                found.append(node.lineno)
            elif isinstance(node, ast.If):
                if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.ClassDef | ast.Try | ast.With):
                for part in ("body", "orelse", "finalbody", "handlers"):
                    for child in getattr(node, part, []):
                        visit(child.body if isinstance(child, ast.ExceptHandler) else [child])

    visit(tree.body)
    return found


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: module_name(p))
def test_no_module_imports_typing_at_run_time(path: Path) -> None:
    """typing's names are for the checker (magicstick_host/static.py): importing typing costs
    every tick and inspect about 4.6 ms."""
    assert _typing_imports_at_run_time(ast.parse(path.read_text(encoding="utf-8"))) == []


def test_the_typing_check_finds_a_run_time_import() -> None:
    """The check above cannot pass by finding nothing."""
    tree = ast.parse("from magicstick_host.static import TYPE_CHECKING\n"
                     "import typing\n"
                     "if TYPE_CHECKING:\n    from typing import Any\n"
                     "class C:\n    from typing import Literal\n")
    assert _typing_imports_at_run_time(tree) == [2, 6]
