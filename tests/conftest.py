"""Suite-wide fixtures.

The subprocess guard: no test may run a real external command unless it says so with
`@pytest.mark.real_commands`. Commands in unit tests go through a fake or simulated runner;
a real `shutdown` or `apt-get` escaping from a test would be a disaster on a developer's machine.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.kubeserver.fixtures import *  # noqa: F403  (the session-scoped real apiserver)


class RealCommandForbidden(AssertionError):
    pass


@pytest.fixture(autouse=True)
def subprocess_guard(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    if request.node.get_closest_marker("real_commands") is not None:
        yield
        return

    class GuardedPopen(subprocess.Popen):  # type: ignore[type-arg]
        def __init__(self, args: Any, *a: Any, **kw: Any) -> None:
            raise RealCommandForbidden(
                f"test tried to run a real command {args!r}; use the simulated runner "
                "or mark the test @pytest.mark.real_commands"
            )

    def forbidden(*args: Any, **kw: Any) -> Any:
        raise RealCommandForbidden(f"test tried to run a real command {args!r}")

    monkeypatch.setattr(subprocess, "Popen", GuardedPopen)
    for name in ("system", "posix_spawn", "posix_spawnp", "execv", "execve", "execvp"):
        monkeypatch.setattr(os, name, forbidden)
    yield
