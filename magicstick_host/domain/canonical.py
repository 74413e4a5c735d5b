"""Canonical JSON and its SHA-256: the one way every id in the report is computed.

Sorted keys and compact separators (contract.md). Non-ASCII text is kept as UTF-8 rather than
escaped, as RFC 8785 does; NaN/Infinity are refused because they have no JSON spelling.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any


def canonical_json(obj: Any) -> str:
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha256_hex(obj: Any) -> str:
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()
