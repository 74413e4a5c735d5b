"""DELETE WITH ITS LAST IMPORT (issue 26): a shim re-exporting typing's names.

The package imports `typing` itself; this re-export remains only for the modules another
change of issue 26 is editing (lite_dataclasses.py, ports/http_response.py,
ports/kubeconfig.py, schemas/compiled.py), whose import lines switch to typing at its end.
tests/test_layers.py allows no other importer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

__all__ = ["TYPE_CHECKING", "Protocol"]
