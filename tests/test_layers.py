"""The layers of architecture.md, checked on the import graph (every import, also the ones inside
functions), so that they stay true when nobody is looking:
- domain/ is pure: no ports, effects, simulator, CLI or tick, and no I/O library;
- effects/ decide nothing: they import no domain module;
- only the composition root (app.py) imports the tick, and only it loads the simulator;
- the CLI never loads the simulator unless a `sim` command or `--executor sim` asks for it;
- no two modules import each other, through any chain of imports.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Collection, Mapping
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
    # app_roots: the composition root's part for simulated hosts (the runner for a root)
    sim = "magicstick_host.sim"
    outside = {m for m in importers_of(sim) if not within(m, sim)}
    assert outside == {"magicstick_host.app_roots"}


# -- no import cycles --------------------------------------------------------------------------


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def runtime_imports(tree: ast.Module, modules: Collection[str]) -> set[str]:
    """The modules among `modules` that a module's source imports when it runs, at any level
    (a function's lazy import counts: it runs as soon as the function does). `from a import b`
    is the module a.b when that is one, else a. Left out:
    - the imports under `if TYPE_CHECKING:`: they never run, so they cannot load a module half
      way or make the import order matter; they are how an annotation names a module that
      imports this one, which mypy checks as it checks any other;
    - the package a module sits in: Python runs a package's __init__ before its modules, but
      that is no import of the __init__'s names (a cycle through one is an import written in
      one of them, which this counts)."""
    unchecked = {id(n) for node in ast.walk(tree)
                 if isinstance(node, ast.If) and is_type_checking(node.test)
                 for stmt in node.body for n in ast.walk(stmt)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in unchecked:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules
                     else node.module for alias in node.names]
        else:
            continue
        found.update(name for name in names if name in modules)
    return found


def import_cycles(graph: Mapping[str, Collection[str]]) -> list[list[str]]:
    """The groups of modules that reach each other through imports (the strongly connected
    components of more than one module, Tarjan's algorithm, without recursion), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next((t for t in targets if t in graph), None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    cycles.append(sorted(group))
    return sorted(cycles)


RUNTIME_GRAPH = {
    name: runtime_imports(ast.parse(path.read_text(encoding="utf-8")), GRAPH) - {name}
    for path in sorted(PACKAGE.rglob("*.py")) for name in [module_name(path)]
}


def test_no_modules_import_each_other() -> None:
    """A cycle makes a module run on a half-initialised other one (or only in one import
    order), and two layers that import each other are one layer: the composition root (app.py)
    wires what would otherwise reach back (the network steps into the effects, for one)."""
    cycles = import_cycles(RUNTIME_GRAPH)
    shown = [{m: sorted(RUNTIME_GRAPH[m] & set(group)) for m in group} for group in cycles]
    assert cycles == [], f"modules that import each other: {shown}"


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    """The check above cannot pass by finding nothing: a cycle planted in a synthetic graph,
    through a lazy import and beside a TYPE_CHECKING one, is found; the real graph has edges."""
    modules = {"p.a", "p.b", "p.c", "p.d", "p.e"}
    sources = {
        "p.a": "from p import b\n",
        "p.b": "def later():\n    import p.c\n",
        "p.c": "from p.a import thing\nfrom typing import TYPE_CHECKING\n"
               "if TYPE_CHECKING:\n    from p.e import Type\n",
        "p.d": "import p.a\n",
        "p.e": "from p.d import other\n",
    }
    graph = {m: runtime_imports(ast.parse(src), modules) for m, src in sources.items()}
    assert graph == {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.a"},
                     "p.e": {"p.d"}}
    assert import_cycles(graph) == [["p.a", "p.b", "p.c"]]
    # with the TYPE_CHECKING import counted, p.d and p.e would be in it too
    assert import_cycles({**graph, "p.c": {"p.a", "p.e"}}) == [
        ["p.a", "p.b", "p.c", "p.d", "p.e"]]
    assert import_cycles({"x": {"y"}, "y": {"z"}, "z": set(), "w": {"w"}}) == []
    assert import_cycles({"x": {"y"}, "y": {"x"}, "z": {"x"}}) == [["x", "y"]]
    assert "magicstick_host.effects.effect_ports" in RUNTIME_GRAPH["magicstick_host.effects"]
    assert sum(len(deps) for deps in RUNTIME_GRAPH.values()) > 500


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


# Standard parts first (architecture.md): our own modules that stood in for these saved under
# 10% of the idle tick together (issue 26), so the standard modules are used
REPLACED = {
    "magicstick_host.static": "typing",
    "magicstick_host.digests": "hashlib, hmac",
    "magicstick_host.lazy_pattern": "re",
    "magicstick_host.ports.spawn": "subprocess",
    "magicstick_host.ports.http_response": "http.client",
}
# the interpreter's private halves of those modules: only a replacement reaches for them
PRIVATE_HALVES = frozenset({"_sha2", "_sha256", "_md5", "_hashlib", "_sre", "sre_compile",
                            "re._compiler", "_posixsubprocess", "_typing"})
# os's own ways of starting a process, which subprocess wraps (the runner's group kill and caps
# are on subprocess.Popen: ports/runner.py)
OS_STARTS = frozenset({"posix_spawn", "posix_spawnp", "fork", "forkpty", "execv", "execve",
                       "execvp", "execvpe", "spawnv", "spawnve", "system", "popen"})


def replacement_uses(tree: ast.Module) -> list[str]:
    """What in a module's source stands in for typing, hashlib, hmac, subprocess or re: an
    import of one of our replacements or of a private half of the standard module (also by
    name, through __import__ or importlib), or a process started with os's own calls."""
    found: list[str] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Name) and node.func.id == "__import__")
                   or (isinstance(node.func, ast.Attribute)
                       and node.func.attr == "import_module"))):
            names = [node.args[0].value]
        elif (isinstance(node, ast.Attribute) and node.attr in OS_STARTS
              and isinstance(node.value, ast.Name) and node.value.id == "os"):
            found.append(f"os.{node.attr}")
        for name in names:
            if any(within(name, r) for r in REPLACED) or name in PRIVATE_HALVES:
                found.append(name)
    return sorted(set(found))


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: module_name(p))
def test_no_module_imports_a_replacement_of_a_standard_part(path: Path) -> None:
    """Standard parts first: typing, hashlib and hmac, subprocess and re are used as they are."""
    name = module_name(path)
    found = replacement_uses(ast.parse(path.read_text(encoding="utf-8")))
    assert found == [], f"{name} stands in for a standard part: {found}"


def test_the_replacements_are_gone() -> None:
    """static.py, digests.py, lazy_pattern.py, spawn.py and http_response.py stood in for
    typing, hashlib, re, subprocess and http.client (issue 26): they are deleted, and nothing
    may bring them back."""
    for gone in ("static", "digests", "lazy_pattern", "ports.spawn", "ports.http_response"):
        assert f"magicstick_host.{gone}" not in GRAPH
        assert not (PACKAGE / (gone.replace(".", "/") + ".py")).exists()


# what only a reader of HTTP answers of our own would spell out: a status line's start, and the
# framing fields http.client reads (the transport writes a Content-Length, never reads one)
HTTP_READER_WORDS = ("transfer-encoding", "chunked")


def http_reader_words(tree: ast.Module) -> list[str]:
    """String constants (not docstrings) that only a parser of HTTP answers needs."""
    docstrings = {id(node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or id(node) in docstrings:
            continue
        value = node.value
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        if isinstance(text, str) and (text.startswith("HTTP/")
                                      or text.strip(" :").lower() in HTTP_READER_WORDS):
            found.append(text)
    return found


def test_answers_are_read_by_http_client_and_by_no_reader_of_our_own() -> None:
    """The lean transport reads each answer with http.client.HTTPResponse (issue 26: our own
    reader, ports/http_response.py, saved under 10% of the idle tick): no module of the
    package reads a status line or a body's framing itself."""
    transport = PACKAGE / "ports" / "kube_http.py"
    tree = ast.parse(transport.read_text(encoding="utf-8"))
    assert "http.client" in GRAPH["magicstick_host.ports.kube_http"]
    assert any(isinstance(node, ast.Attribute) and node.attr == "HTTPResponse"
               for node in ast.walk(tree))
    for path in sorted(PACKAGE.rglob("*.py")):
        found = http_reader_words(ast.parse(path.read_text(encoding="utf-8")))
        assert found == [], f"{module_name(path)} reads HTTP answers itself: {found}"


def test_the_http_reader_check_finds_what_it_looks_for() -> None:
    tree = ast.parse('"""HTTP/1.1 answers, chunked."""\n'
                     'def status(line):\n    """Transfer-Encoding: chunked"""\n'
                     '    return line.startswith(b"HTTP/1.") or line == "HTTP/1.0"\n'
                     'FIELDS = {"transfer-encoding": 1, "x": "Chunked"}\n'
                     'REQUEST = f"GET / HTTP/1.1"\n')
    assert sorted(http_reader_words(tree)) == ["Chunked", "HTTP/1.", "HTTP/1.0",
                                               "transfer-encoding"]


TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize("path", sorted(TESTS.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(TESTS)))
def test_no_test_imports_a_replacement_of_a_standard_part(path: Path) -> None:
    """The suite holds the product to the standard modules, and uses them itself."""
    found = replacement_uses(ast.parse(path.read_text(encoding="utf-8")))
    assert [f for f in found if f.startswith("magicstick_host.") or f in PRIVATE_HALVES] == []


def test_the_replacement_check_finds_what_it_looks_for() -> None:
    """The check above cannot pass by finding nothing."""
    tree = ast.parse("from magicstick_host.static import TYPE_CHECKING\n"
                     "from magicstick_host import digests\n"
                     "import magicstick_host.lazy_pattern\n"
                     "from magicstick_host.ports.spawn import spawn_piped\n"
                     "from magicstick_host.ports.http_response import read_response\n"
                     "sha = __import__('_sha2')\n"
                     "def start(os):\n    return os.posix_spawnp('ip', ['ip'], {})\n"
                     "import re, typing, hashlib, hmac, subprocess\n")
    assert replacement_uses(tree) == [
        "_sha2", "magicstick_host.digests", "magicstick_host.lazy_pattern",
        "magicstick_host.ports.http_response", "magicstick_host.ports.http_response.read_response",
        "magicstick_host.ports.spawn", "magicstick_host.ports.spawn.spawn_piped",
        "magicstick_host.static", "magicstick_host.static.TYPE_CHECKING", "os.posix_spawnp"]
