"""SHA-256 and HMAC-SHA256, importing hashlib only for large inputs.

hashlib loads OpenSSL's libcrypto and registers every algorithm it has: about 4 ms of the
console's `inspect`, which makes no TLS connection and hashes only small documents (plan ids,
memo keys, the keyed network id). The interpreter carries its own SHA-256 (`_sha2` from Python
3.12, `_sha256` before): the same digests, in microseconds to import, but about ten times
slower per byte than OpenSSL's with the CPU's SHA instructions (4 ms against 0.4 ms for a
640 KB dpkg status file). So inputs from LARGE_BYTES up go to hashlib, imported then, and
smaller ones to the interpreter's own. hashlib is also the fallback for an interpreter built
without its own. HMAC is RFC 2104 over SHA-256, as `hmac.new(key, message, "sha256")`
computes it; tests/test_digests.py holds all of it to the standard modules.
"""

from __future__ import annotations

from collections.abc import Callable

from magicstick_host.static import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Protocol

    class _Hash(Protocol):
        def digest(self) -> bytes: ...

        def hexdigest(self) -> str: ...

BLOCK_BYTES = 64  # SHA-256's block, which HMAC pads its key to
_INNER = bytes(b ^ 0x36 for b in range(256))
_OUTER = bytes(b ^ 0x5C for b in range(256))


def _builtin_sha256() -> Callable[[bytes], _Hash]:
    for name in ("_sha2", "_sha256"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        constructor: Callable[[bytes], _Hash] = module.sha256
        return constructor
    import hashlib

    return hashlib.sha256


_sha256 = _builtin_sha256()
LARGE_BYTES = 64 * 1024


def _hash(data: bytes) -> _Hash:
    if len(data) >= LARGE_BYTES:
        import hashlib

        return hashlib.sha256(data)
    return _sha256(data)


def sha256_digest(data: bytes) -> bytes:
    return _hash(data).digest()


def sha256_hex(data: bytes) -> str:
    return _hash(data).hexdigest()


def hmac_sha256_hex(key: bytes, message: bytes) -> str:
    if len(key) > BLOCK_BYTES:
        key = sha256_digest(key)
    key = key.ljust(BLOCK_BYTES, b"\0")
    inner = sha256_digest(key.translate(_INNER) + message)
    return sha256_hex(key.translate(_OUTER) + inner)
