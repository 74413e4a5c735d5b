"""The `magicstick-host` command the tests and the bench run as a process.

`magicstick_command()`: the console script beside the running interpreter (the development
venv's), or, under an interpreter without one (the Python 3.14 root's, tests/py314), the
install role's wrapper rendered for that interpreter over this checkout, as
playbooks/install.yml writes it on an appliance. `render_wrapper` is that rendering, by jinja2
as the role's template module does (tests/bench.py measures the command it writes)."""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
WRAPPER = CHECKOUT / "playbooks" / "roles" / "install" / "templates" / "magicstick-host.j2"


def render_wrapper(python: str) -> str:
    """The install's wrapper for interpreter `python`, over this checkout."""
    import jinja2

    return jinja2.Template(WRAPPER.read_text(encoding="utf-8"), keep_trailing_newline=True,
                           undefined=jinja2.StrictUndefined).render(
        magicstick_python=python, magicstick_lib_dir=str(CHECKOUT))


def write_command(python: str, path: Path) -> str:
    """The wrapper for `python` at `path`, executable; whole or absent, for tests started side
    by side."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(render_wrapper(python), encoding="utf-8")
    partial.chmod(0o755)
    partial.replace(path)
    return str(path)


def magicstick_command() -> str:
    script = Path(sys.executable).parent / "magicstick-host"
    if script.exists():
        return str(script)
    key = hashlib.sha256(render_wrapper(sys.executable).encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"magicstick-host-command-{os.geteuid()}-{key}"
    path = folder / "magicstick-host"
    if not path.exists():
        # readable by all (a test runs it as nobody), writable by this user alone
        folder.mkdir(mode=0o755, exist_ok=True)
        info = folder.stat()
        assert info.st_uid == os.geteuid() and not info.st_mode & 0o022, (
            f"{folder} is not this user's alone")
        write_command(sys.executable, path)
    return str(path)
