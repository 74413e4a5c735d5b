"""When a memo may be used (ports/command_memo.py), and the seal of one that holds a credential.
Pure: the port passes what `fstat` said about the open descriptor.

architecture.md, "Hostile until bounded": a memo is trusted only from a directory (not a
symlink) owned by the worker (root) that no one else can write, each file a regular file owned
by the worker, readable and writable by no one else (0600), of bounded size. Anything else is
not a memo the worker wrote: it is ignored, and recomputed. Only the owner (or root) can then
have written what the file says.

The seal. A memo of a parse is keyed by the digest of its source's bytes, and the digest is in
the memo: anyone who could write the memo could keep the key and change the answer (the
kubeconfig memo's server, where the worker sends its bearer token). The ownership rules above
already leave only root able to do that; the seal adds that whoever writes a sealed memo must
also have *read the source*. It is an HMAC of the key and the remembered text, keyed by a
digest of the source's bytes under a label of its own. Not by the bytes directly: HMAC hashes
a key longer than its block to SHA-256(key), which is exactly the memo's (public) key, and
not SHA-256(bytes + label), which SHA-256(bytes) extends to. So a memo holding a credential
can be forged by no one who cannot read the credential's own file: it is never less protected
than its source, even if a directory rule were ever got round (a bind mount, a wrong
RuntimeDirectoryMode=).
"""

from __future__ import annotations

import stat
from collections.abc import Collection

# the bits no one but the owner may have on a memo file, and the write bits on its directory
OTHERS = 0o077
OTHERS_WRITE = 0o022
SEAL_LABEL = b"magicstick-host memo seal v1\0"
SEAL_HEX = 64  # an HMAC-SHA256, in hex


def directory_trusted(mode: int, uid: int, owners: Collection[int]) -> bool:
    """A directory (an lstat or an fstat of one opened with O_NOFOLLOW) that holds memos."""
    return stat.S_ISDIR(mode) and uid in owners and not mode & OTHERS_WRITE


def file_trusted(mode: int, uid: int, size: int, owners: Collection[int], max_bytes: int) -> bool:
    """A memo file, from the fstat of its open descriptor."""
    return (stat.S_ISREG(mode) and uid in owners and not mode & OTHERS
            and 0 <= size <= max_bytes)


def _seal_of(secret: bytes, key: str, text: str) -> str:
    import hashlib  # only sealed memos (the tick's kubeconfig): `inspect` loads no hmac
    import hmac

    seal_key = hashlib.sha256(SEAL_LABEL + secret).digest()
    message = key.encode("utf-8") + b"\0" + text.encode("utf-8")
    return hmac.new(seal_key, message, "sha256").hexdigest()


def seal(secret: bytes, key: str, text: str) -> str:
    """`text` as a sealed memo stores it: its seal, a line break, the text."""
    return f"{_seal_of(secret, key, text)}\n{text}"


def unseal(secret: bytes, key: str, sealed: str) -> str | None:
    """The text of a memo `seal` made with this source and key; None for any other."""
    mark, newline, text = sealed[:SEAL_HEX], sealed[SEAL_HEX:SEAL_HEX + 1], sealed[SEAL_HEX + 1:]
    import hmac

    expected = _seal_of(secret, key, text)
    # the standard constant-time comparison: how much of a seal matched says nothing
    if newline != "\n" or not mark.isascii() or not hmac.compare_digest(mark, expected):
        return None
    return text
