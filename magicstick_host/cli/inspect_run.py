"""What `magicstick-host inspect` does, for both readers of its command line (click's, in
inspect_cmd.py, and the fast path, tick_fast.py)."""

from __future__ import annotations

import json
import sys

from magicstick_host import app
from magicstick_host.errors import ExitCode


def run_inspect_command(root: str, profiles_dir: str | None, as_json: bool) -> int:
    doc = app.inspect_host(root, profiles_dir)
    if as_json:
        text = json.dumps(doc, indent=2, sort_keys=True)
    else:  # the text view's module only for it
        from magicstick_host.cli.render import render_inspection

        text = render_inspection(doc)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    return int(ExitCode.OK)
