"""magicstick_host/digests.py gives the standard modules' digests, for every input size and
key, whichever SHA-256 it uses."""

from __future__ import annotations

import hashlib
import hmac
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magicstick_host import digests

SIZES = (0, 1, 55, 56, 63, 64, 65, digests.LARGE_BYTES - 1, digests.LARGE_BYTES,
         digests.LARGE_BYTES + 1, 640 * 1024)  # fmt: skip


@pytest.mark.parametrize("size", SIZES)
def test_sha256_is_the_standard_digest_at_every_size(size: int) -> None:
    data = bytes(i * 7 % 256 for i in range(size))
    assert digests.sha256_hex(data) == hashlib.sha256(data).hexdigest()
    assert digests.sha256_digest(data) == hashlib.sha256(data).digest()


@given(st.binary(max_size=300))
def test_sha256_of_any_input(data: bytes) -> None:
    assert digests.sha256_hex(data) == hashlib.sha256(data).hexdigest()


@given(st.binary(max_size=200), st.binary(max_size=300))
def test_hmac_of_any_key_and_message(key: bytes, message: bytes) -> None:
    assert digests.hmac_sha256_hex(key, message) == hmac.new(key, message, "sha256").hexdigest()


@pytest.mark.parametrize("key_size", (0, 1, 32, 63, 64, 65, 128, 1000))
def test_hmac_pads_and_hashes_keys_as_rfc_2104(key_size: int) -> None:
    key = bytes(range(256)) * 4
    assert digests.hmac_sha256_hex(key[:key_size], b"message") == hmac.new(
        key[:key_size], b"message", "sha256").hexdigest()


def test_the_rfc_4231_vector() -> None:
    # RFC 4231, test case 2
    assert digests.hmac_sha256_hex(b"Jefe", b"what do ya want for nothing?") == (
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")


def test_small_inputs_use_the_interpreters_own_sha256() -> None:
    """The point of the module: nothing small loads OpenSSL (hashlib is the fallback only)."""
    assert "openssl" not in repr(digests._builtin_sha256())


def test_without_the_interpreters_own_sha256_hashlib_serves(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "_sha2", None)  # type: ignore[arg-type]
    monkeypatch.setitem(sys.modules, "_sha256", None)  # type: ignore[arg-type]
    assert digests._builtin_sha256() is hashlib.sha256
