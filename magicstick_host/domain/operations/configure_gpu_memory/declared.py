"""The steps configure-gpu-memory runs, declared to the registry. Its decisions (phases.py,
verify.py, classify.py) load only when it runs."""

from __future__ import annotations

WRITE_CARVEOUT = "write-carveout"
WRITE_TTM = "write-ttm-config"
