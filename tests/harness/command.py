"""The `magicstick-host` command the tests run as a process: the console script beside the
running interpreter (the development venv's), or, under an interpreter without one (the
Python 3.14 root's, tests/py314), the install role's wrapper rendered for that interpreter
over this checkout, as playbooks/install.yml writes it on an appliance."""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
WRAPPER = CHECKOUT / "playbooks" / "roles" / "install" / "templates" / "magicstick-host.j2"


def magicstick_command() -> str:
    script = Path(sys.executable).parent / "magicstick-host"
    if script.exists():
        return str(script)
    text = (WRAPPER.read_text(encoding="utf-8")
            .replace("{{ magicstick_python }}", sys.executable)
            .replace("{{ magicstick_lib_dir }}", str(CHECKOUT)))
    assert "{{" not in text, f"{WRAPPER} has a placeholder this rendering does not fill"
    key = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"magicstick-host-command-{os.geteuid()}-{key}"
    path = folder / "magicstick-host"
    if not path.exists():
        # readable by all (a test runs it as nobody), writable by this user alone
        folder.mkdir(mode=0o755, exist_ok=True)
        info = folder.stat()
        assert info.st_uid == os.geteuid() and not info.st_mode & 0o022, (
            f"{folder} is not this user's alone")
        partial = folder / f".magicstick-host.{os.getpid()}"
        partial.write_text(text, encoding="utf-8")
        partial.chmod(0o755)
        partial.replace(path)  # whole or absent, for tests started side by side
    return str(path)
