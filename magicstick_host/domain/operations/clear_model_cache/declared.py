"""The step clear-model-cache runs, declared to the registry. Its decisions (phases.py) load
only when it runs."""

from __future__ import annotations

DELETE_STEP = "delete-cache-entry"
# the hub's shared-store payloads that only the deleted models used, a batch at a time
SWEEP_STEP = "sweep-shared-blobs"
