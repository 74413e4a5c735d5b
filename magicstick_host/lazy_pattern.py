"""DELETE WITH ITS LAST IMPORT (issue 26): a shim, `LazyPattern` is `re.compile`.

The package compiles its patterns with re at import; this remains only for
ports/kubeconfig.py, which another change of issue 26 is editing (its import line switches to
re at its end). tests/test_layers.py allows no other importer.
"""

from __future__ import annotations

import re

LazyPattern = re.compile

__all__ = ["LazyPattern"]
