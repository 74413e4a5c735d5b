"""/var/lib/dpkg/status: deb822 stanzas (`Package:`, `Status:`, `Version:`), read as dpkg reads
its own database (dpkg's lib/dpkg/parse.c), held to `dpkg-query --admindir` in
tests/owners/test_dpkg_status.py.

Strict where dpkg is: a file dpkg-query refuses (a missing final newline, a whitespace-only line
that joins two stanzas, an unknown Status word, two stanzas of one package and architecture, a
status its trigger fields contradict, a package name with a space...) is a ParseError for the
whole file, because a corrupt status file means nobody can say what is installed, and a partial
answer could look like "not installed". Lax where dpkg is: any non-space field name (non-ASCII
included), a blank before the colon, a version dpkg only warns about (the planner cannot compare
it and blocks).

Every package's state is kept (want, error flag, status): a package that is not cleanly
installed or cleanly absent (`iU`, `iF`, `iH`, `iW`, `it`, any `R`) is "unsettled", neither
installed nor absent; see `unsettled_packages`.
"""

from __future__ import annotations

from collections.abc import Iterable

from magicstick_host.domain.parsers.common import ParseError, shorten
from magicstick_host.domain.versions import dpkg_refuses_version
from magicstick_host.lite_dataclasses import dataclass

WANTS = ("unknown", "install", "hold", "deinstall", "purge")
FLAGS = ("ok", "reinstreq")
# dpkg's order of the package states (pkg_status), which its checks below rely on
STATES = ("not-installed", "config-files", "half-installed", "unpacked", "half-configured",
          "triggers-awaited", "triggers-pending", "installed")
MULTI_ARCH = ("no", "same", "foreign", "allowed")
# the letters of `dpkg-query -W -f '${db:Status-Abbrev}'`
WANT_ABBREV = dict(zip(WANTS, "uihrp", strict=True))
STATE_ABBREV = dict(zip(STATES, "ncHUFWti", strict=True))
# the states dpkg --configure -a finishes; half-installed and reinst-required it does not
CONFIGURABLE = frozenset({"unpacked", "half-configured", "triggers-awaited", "triggers-pending"})
# C's isspace() in the C locale: what dpkg's parser takes for white space
_SPACE = " \t\n\v\f\r"
_LINE_SPACE = frozenset(" \t\v\f\r")
# the fields whose continuation lines are read; the others' (Description, Conffiles) are not
_READ = frozenset({"package", "status", "version", "architecture", "multi-arch",
                   "config-version", "triggers-pending", "triggers-awaited"})


@dataclass(frozen=True)
class DpkgStanza:
    package: str
    status: str | None  # the Status field as written
    version: str | None
    architecture: str | None
    want: str = "unknown"
    flag: str = "ok"
    state: str = "not-installed"
    multi_arch: str = "no"

    @property
    def installed(self) -> bool:
        """Cleanly installed. The want (install/hold/deinstall/purge) is ignored: a held
        package is installed. `iiR` (installed, reinst-required) is not: dpkg says it must be
        reinstalled."""
        return self.state == "installed" and self.flag == "ok"

    @property
    def absent(self) -> bool:
        """Not installed, or removed with its configuration files left."""
        return self.state in ("not-installed", "config-files") and self.flag == "ok"

    @property
    def unsettled(self) -> bool:
        return not self.installed and not self.absent

    @property
    def abbrev(self) -> str:
        """`${db:Status-Abbrev}`: want, state, error flag (`R` or a space)."""
        flag = "R" if self.flag == "reinstreq" else " "
        return f"{WANT_ABBREV[self.want]}{STATE_ABBREV[self.state]}{flag}"


@dataclass(frozen=True)
class Unsettled:
    """A package dpkg left between states: neither installed nor absent."""

    package: str
    architecture: str
    status: str  # want, flag and state, as the Status field has them

    @property
    def fix(self) -> str:
        """What finishes it: dpkg --configure -a, or (reinst-required, half-installed) a
        reinstallation, which dpkg --configure -a does not do."""
        _, flag, state = self.status.split()
        if flag == "ok" and state in CONFIGURABLE:
            return "dpkg --configure -a"
        return f"apt-get install --reinstall {self.package}"


def _status(value: str, lineno: int, package: str) -> tuple[str, str, str]:
    words = value.lower().split()
    if len(words) != 3:
        raise ParseError(f"{_at(lineno, package)}: Status {shorten(value)!r} is not three words")
    want, flag, state = words
    if want not in WANTS or flag not in FLAGS or state not in STATES:
        raise ParseError(
            f"{_at(lineno, package)}: Status {shorten(value)!r} has a word dpkg does not know")
    return want, flag, state


def _legal_name(name: str) -> bool:
    """dpkg's pkg_name_is_illegal: an ASCII letter or digit first, then only those and `-+._`.
    dpkg refuses the whole status file over one such name (a space, a slash, a non-ASCII
    letter), so it must read as unknown here too, not as the other stanzas' versions."""
    return (name.isascii() and name[0].isalnum()
            and name.replace("-", "").replace("+", "").replace(".", "").replace("_", "").isalnum())


def _at(lineno: int, package: str) -> str:
    """The stanza an error names (written only for an error: ~700 stanzas have none)."""
    return f"stanza ending at line {lineno} ({shorten(package)})"


def _stanza(fields: dict[str, str], lineno: int) -> DpkgStanza:
    package = fields.get("package", "").lower()
    if not package:
        raise ParseError(f"stanza ending at line {lineno}: no Package field")
    if not _legal_name(package):
        raise ParseError(f"{_at(lineno, package)}: a package name dpkg refuses")
    status = fields.get("status")
    want, flag, state = ("unknown", "ok", "not-installed") if status is None else (
        _status(status, lineno, package))
    version = fields.get("version")
    if version is not None and dpkg_refuses_version(version):
        raise ParseError(f"{_at(lineno, package)}: Version {shorten(version)!r} is refused by dpkg")
    if version is None and state not in ("not-installed", "half-installed"):
        raise ParseError(f"{_at(lineno, package)}: {state} package has no Version")
    multi_arch = fields.get("multi-arch", "no").lower()
    if multi_arch not in MULTI_ARCH:
        raise ParseError(
            f"{_at(lineno, package)}: Multi-Arch {shorten(multi_arch)!r} is not a dpkg value")
    architecture = fields.get("architecture")
    if multi_arch == "same" and architecture in ("all", "", None):
        raise ParseError(f"{_at(lineno, package)}: Multi-Arch: same without a machine architecture")
    # dpkg's consistency checks of a status stanza (pkg_parse_verify)
    order = STATES.index(state)
    if fields.get("config-version") is not None and state in (
            "installed", "triggers-pending", "not-installed"):
        raise ParseError(f"{_at(lineno, package)}: Config-Version on an {state} package")
    # a trigger field is rare: split only when there is one
    awaited_text, pending_text = fields.get("triggers-awaited"), fields.get("triggers-pending")
    awaited = bool(awaited_text and awaited_text.split())
    pending = bool(pending_text and pending_text.split())
    if awaited and not STATES.index("half-installed") <= order <= STATES.index(
            "triggers-awaited"):
        raise ParseError(f"{_at(lineno, package)}: {state} package awaits triggers")
    if state == "triggers-awaited" and not awaited:
        raise ParseError(f"{_at(lineno, package)}: triggers-awaited package awaits no trigger")
    if pending and state not in ("triggers-pending", "triggers-awaited"):
        raise ParseError(f"{_at(lineno, package)}: {state} package has triggers pending")
    if state == "triggers-pending" and not pending:
        raise ParseError(f"{_at(lineno, package)}: triggers-pending package has no trigger pending")
    # by position, in the fields' order: the decorator's quickest call (~700 stanzas)
    return DpkgStanza(package, status, version, architecture, want, flag, state, multi_arch)


def _field_name(line: str, lineno: int) -> tuple[str, str]:
    """dpkg's field line: the name runs to the first white space or `:` (any other byte, so a
    non-ASCII name is a name), blanks may come before the colon; the value is the rest."""
    # the usual name (ASCII letters, digits, hyphens) without a character loop: ~10,000 lines
    name, colon, value = line.partition(":")
    if colon and name.isascii() and name.replace("-", "").isalnum() and name[0] != "-":
        return name.lower(), value
    end = 0
    while end < len(line) and line[end] not in _SPACE and line[end] != ":":
        end += 1
    name = line[:end]
    if not name:
        raise ParseError(f"line {lineno}: empty field name: {shorten(line)!r}")
    if name[0] == "-":
        raise ParseError(f"line {lineno}: field name starts with a hyphen: {shorten(line)!r}")
    rest = line[end:].lstrip(_SPACE)
    if not rest.startswith(":"):
        raise ParseError(f"line {lineno}: not a field: {shorten(line)!r}")
    return name.lower(), rest[1:]


def _check_instances(stanzas: list[DpkgStanza]) -> None:
    """dpkg's database has one slot per package and architecture, and only `Multi-Arch: same`
    packages may be in it on several architectures at once. dpkg refuses the rest, except a
    second stanza of one package and architecture that it lets replace the first: refused here
    too (which of two stanzas is true is unknown)."""
    slots: set[tuple[str, str]] = set()
    present: dict[str, list[DpkgStanza]] = {}
    for stanza in stanzas:
        slot = (stanza.package, stanza.architecture or "")
        if slot in slots:
            raise ParseError(f"{stanza.package} ({slot[1] or 'no architecture'}) has two stanzas")
        slots.add(slot)
        if stanza.state != "not-installed":
            present.setdefault(stanza.package, []).append(stanza)
    for package, instances in present.items():
        if len(instances) > 1 and any(s.multi_arch != "same" for s in instances):
            raise ParseError(f"{package} is on several architectures but not Multi-Arch: same")


def parse_dpkg_status(text: str) -> tuple[DpkgStanza, ...]:
    if text and not text.endswith("\n"):
        raise ParseError("no newline at the end of the file (dpkg refuses it)")
    if "\0" in text or "\x1a" in text:
        raise ParseError("a NUL or ^Z byte in the file")
    stanzas: list[DpkgStanza] = []
    fields: dict[str, str] = {}
    last: str | None = None
    usual: dict[str, str] = {}  # a usual field name as written -> its name in lower case
    lines = text.split("\n")[:-1] if text else []
    for lineno, line in enumerate(lines, start=1):
        if not line:
            if fields:
                stanzas.append(_stanza(fields, lineno))
            fields, last = {}, None
            continue
        if line[0] in _LINE_SPACE:
            if last is None:
                raise ParseError(f"line {lineno}: continuation line outside a field")
            # a continuation line (Description, Conffiles); a whitespace-only one does not end
            # the stanza (dpkg warns "blank line in value" and reads on)
            if last in _READ:
                fields[last] = f"{fields[last]}\n{line}".rstrip(_SPACE)
            continue
        # _field_name's usual case inline (~10,000 field lines): an ASCII name and a colon,
        # checked once per distinct name (a few dozen) and then looked up
        raw, colon, value = line.partition(":")
        name = usual.get(raw) if colon else None
        if name is None:
            if colon and raw.isascii() and raw.replace("-", "").isalnum() and raw[0] != "-":
                name = usual[raw] = raw.lower()
            else:
                name, value = _field_name(line, lineno)
        if name in fields:
            raise ParseError(f"line {lineno}: duplicate field {shorten(name)}")
        # only the fields a stanza is read by keep their value (_stanza reads no other)
        fields[name] = value.strip(_SPACE) if name in _READ else ""
        last = name
    if fields:
        stanzas.append(_stanza(fields, len(lines)))
    _check_instances(stanzas)
    return tuple(stanzas)


def installed_versions(stanzas: Iterable[DpkgStanza]) -> dict[str, tuple[str, ...]]:
    """Installed package name -> its installed versions (more than one only when multi-arch
    copies differ; the caller decides what that means)."""
    found: dict[str, set[str]] = {}
    for stanza in stanzas:
        if stanza.installed and stanza.version:
            found.setdefault(stanza.package, set()).add(stanza.version)
    return {name: tuple(sorted(versions)) for name, versions in found.items()}


def unsettled_packages(stanzas: Iterable[DpkgStanza]) -> tuple[Unsettled, ...]:
    """The packages dpkg left between states, by name: neither installed nor absent."""
    return tuple(sorted(
        (Unsettled(s.package, s.architecture or "", f"{s.want} {s.flag} {s.state}")
         for s in stanzas if s.unsettled),
        key=lambda u: (u.package, u.architecture),
    ))
