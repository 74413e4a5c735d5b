"""Free text as the documents bound it: every limit in one place, and the one way to clip. Pure.

Each constant is the `maxLength` of the fields that carry such text; tests/domain/test_text.py
holds them to the schemas (state, report, plan, network, nvidia-health, network-trial) and to
the HostOperation CRD's `status.message`, which contract.md bounds: "≤2048 characters, always
clipped". JSON Schema's `maxLength` (and the Kubernetes API server's) counts code points, as
`len` of a str does, so a clipped text fits wherever it goes.

Text is clipped where it is made: the domain types that carry it (domain/state.py `Operation`,
`Step`, `Block`) clip in their constructor, so a state, a report or a status built from them
cannot carry more; a document section built from parts (a capability's message, a rejection's
status) clips once, when it is assembled.
"""

from __future__ import annotations

# HostOperation status.message (CRD, contract.md); the report's messages (plan, gpuMemory,
# network, modelCache, nvidia, operation); state.json operation.message, block.message and a
# step's detail
MAX_MESSAGE = 2048
# state.json operation.statusRefused: why the server refused the last status write
MAX_STATUS_REFUSED = 1024
# state.json convergence.message (domain/convergence/run.py)
MAX_CONVERGENCE_MESSAGE = 1024

ELLIPSIS = "…"


def clip_message(text: str, limit: int = MAX_MESSAGE) -> str:
    """`text` in at most `limit` code points: cut, with "…" as its last, when longer.

    A lone surrogate (a path that is not UTF-8, decoded with surrogateescape) has no UTF-8
    encoding: it is written as its escape (e.g. "\\udcff"), so the text is valid Unicode
    wherever it is sent; a cut never splits a character, since a str is code points."""
    if not text.isascii():
        text = _encodable(text)
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def _encodable(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text
