"""LazyPattern answers as the compiled pattern does, and the tick's modules compile none at
import (magicstick_host/lazy_pattern.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magicstick_host.lazy_pattern import LazyPattern

PATTERNS = [r"[0-9]+", r"^(\d+)\.(\d+)(?:\.(\d+))?(?:$|[-+~_.])", r"([A-Z_]+)=(.*)",
            r"\\x([0-9a-fA-F]{2})", r"(?P<name>[a-z]+) (?P<value>-?[0-9]+)", r"a|b*"]
TEXT = st.text(alphabet="ab019.-_=xAZ \\\n", max_size=40)


def spans(found: re.Match[str] | None) -> object:
    return None if found is None else (found.span(), found.groups(), found.groupdict())


@given(st.sampled_from(PATTERNS), TEXT, st.integers(0, 5), st.integers(0, 50))
def test_answers_as_the_compiled_pattern(source: str, text: str, pos: int, endpos: int) -> None:
    lazy, compiled = LazyPattern(source), re.compile(source)
    for method in ("fullmatch", "match", "search"):
        assert spans(getattr(lazy, method)(text)) == spans(getattr(compiled, method)(text))
        assert (spans(getattr(lazy, method)(text, pos, endpos))
                == spans(getattr(compiled, method)(text, pos, endpos)))
    assert [spans(m) for m in lazy.finditer(text)] == [spans(m) for m in compiled.finditer(text)]
    assert lazy.sub("<\\g<0>>", text) == compiled.sub("<\\g<0>>", text)
    assert lazy.sub(lambda m: m.group(0).upper(), text, 1) == compiled.sub(
        lambda m: m.group(0).upper(), text, 1)
    assert lazy.pattern == source


def test_a_bad_pattern_fails_where_it_is_used() -> None:
    lazy = LazyPattern(r"(unclosed")
    try:
        lazy.fullmatch("x")
    except re.error:
        return
    raise AssertionError("re.error expected")


# every module of the package but the simulator, imported in a fresh process, with re.compile
# counted from the first of them on
COUNT_COMPILES = """
import json, pkgutil, importlib, re, sys
import magicstick_host
compiled = []
original = re._compile
def counting(pattern, flags):
    frame = sys._getframe(1)
    while frame.f_globals.get("__name__", "").partition(".")[0] == "re":
        frame = frame.f_back
    compiled.append((frame.f_globals.get("__name__"), str(pattern)))
    return original(pattern, flags)
re._compile = counting
names = [m.name for m in pkgutil.walk_packages(magicstick_host.__path__, "magicstick_host.")
         if ".sim" not in m.name and not m.name.endswith("__main__")]
for name in names:
    importlib.import_module(name)
print(json.dumps([c for c in compiled if c[0] and c[0].startswith("magicstick_host")]))
"""


@pytest.mark.real_commands
def test_importing_the_package_compiles_no_pattern() -> None:
    """A pattern compiled at import costs every tick, used or not: the package's own modules
    compile theirs when first used (LazyPattern). The standard library's are not counted."""
    out = subprocess.run([sys.executable, "-c", COUNT_COMPILES], capture_output=True,
                         text=True, check=True, timeout=120).stdout
    assert json.loads(out) == []
