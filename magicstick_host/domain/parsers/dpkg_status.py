"""/var/lib/dpkg/status: deb822 stanzas (`Package:`, `Status:`, `Version:`).

Strict on structure: a corrupt status file means we cannot say what is installed, so the
whole file is a ParseError rather than a partial answer that could look like "not installed".
"""

from __future__ import annotations

from collections.abc import Iterable

from magicstick_host.domain.parsers.common import ParseError, shorten, split_lines
from magicstick_host.lite_dataclasses import dataclass


@dataclass(frozen=True)
class DpkgStanza:
    package: str
    status: str | None
    version: str | None
    architecture: str | None

    @property
    def installed(self) -> bool:
        # the want flag (install/hold/deinstall) is ignored: a held package is installed
        words = (self.status or "").split()
        return len(words) == 3 and words[1] == "ok" and words[2] == "installed"


def _stanza(fields: dict[str, str], lineno: int) -> DpkgStanza:
    package = fields.get("package", "").strip()
    if not package:
        raise ParseError(f"stanza ending at line {lineno}: no Package field")
    version = fields.get("version")
    stanza = DpkgStanza(
        package=package,
        status=fields.get("status"),
        version=version.strip() if version is not None else None,
        architecture=fields.get("architecture"),
    )
    if stanza.installed and not stanza.version:
        raise ParseError(f"stanza ending at line {lineno}: installed {package} has no Version")
    return stanza


def _is_field_name(name: str) -> bool:
    """deb822's field name: one or more printable ASCII characters other than space and `:`
    (the caller splits at the first `:`). String tests, not a regular expression: a status file
    has some 10,000 field lines, and this is the parse of the first tick after a boot."""
    return name != "" and name.isascii() and name.isprintable() and " " not in name


def parse_dpkg_status(text: str) -> tuple[DpkgStanza, ...]:
    stanzas: list[DpkgStanza] = []
    fields: dict[str, str] = {}
    last: str | None = None
    lines = split_lines(text)
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            if fields:
                stanzas.append(_stanza(fields, lineno))
            fields, last = {}, None
            continue
        if line[0] in " \t":
            if last is None:
                raise ParseError(f"line {lineno}: continuation line outside a field")
            # continuation lines belong to multi-line fields (Description, Conffiles)
            continue
        name, colon, value = line.partition(":")
        if not colon or not _is_field_name(name):
            raise ParseError(f"line {lineno}: not a field: {shorten(line)!r}")
        last = name.lower()
        if last in fields:
            raise ParseError(f"line {lineno}: duplicate field {name}")
        fields[last] = value.strip()
    if fields:
        stanzas.append(_stanza(fields, len(lines)))
    return tuple(stanzas)


def installed_versions(stanzas: Iterable[DpkgStanza]) -> dict[str, tuple[str, ...]]:
    """Installed package name -> its installed versions (more than one only when multi-arch
    copies differ; the caller decides what that means)."""
    found: dict[str, set[str]] = {}
    for stanza in stanzas:
        if stanza.installed and stanza.version:
            found.setdefault(stanza.package, set()).add(stanza.version)
    return {name: tuple(sorted(versions)) for name, versions in found.items()}
