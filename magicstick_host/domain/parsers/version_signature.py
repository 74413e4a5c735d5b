"""/proc/version_signature (Ubuntu only): `Ubuntu 7.0.0-31.31-generic 7.0.4`, or on HWE
kernels `Ubuntu 7.0.0-31.31~24.04.1-generic 7.0.4`."""

from __future__ import annotations

import re

from magicstick_host.domain.parsers.common import ParseError, shorten, single_line
from magicstick_host.lite_dataclasses import dataclass

# <abi>.<upload>[~suffix]-<flavour>; the flavour may itself contain dashes (generic-64k)
_KERNEL = re.compile(
    r"(?P<abi>[0-9]+\.[0-9]+\.[0-9]+-[0-9]+)\.(?P<upload>[0-9]+)"
    r"(?P<suffix>[~+][0-9A-Za-z.+~]+)?-(?P<flavour>[a-z0-9][a-z0-9-]*)"
)
_UPSTREAM = re.compile(r"[0-9]+(?:\.[0-9]+)*(?:-rc[0-9]+)?(?:\+)?")
_DISTRO = re.compile(r"[A-Za-z][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class VersionSignature:
    distro: str  # Ubuntu
    package_version: str  # 7.0.0-31.31 or 7.0.0-31.31~24.04.1
    flavour: str  # generic
    upstream_version: str  # 7.0.4
    abi: str  # 7.0.0-31

    @property
    def release(self) -> str:
        """The `uname -r` this signature belongs to, e.g. 7.0.0-31-generic."""
        return f"{self.abi}-{self.flavour}"


def parse_version_signature(text: str) -> VersionSignature:
    words = single_line(text, "version_signature").split(" ")
    if len(words) != 3:
        raise ParseError(f"version_signature: not three words: {shorten(' '.join(words))!r}")
    distro, kernel, upstream = words
    match = _KERNEL.fullmatch(kernel)
    if not _DISTRO.fullmatch(distro) or match is None or not _UPSTREAM.fullmatch(upstream):
        raise ParseError(f"version_signature: unexpected format: {shorten(' '.join(words))!r}")
    return VersionSignature(
        distro=distro,
        package_version=f"{match['abi']}.{match['upload']}{match['suffix'] or ''}",
        flavour=match["flavour"],
        upstream_version=upstream,
        abi=match["abi"],
    )
