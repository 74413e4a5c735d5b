"""Small one-line identity files: kernel release, arch, boot ID, CPU model, DMI, NVIDIA."""

from __future__ import annotations

import re

from magicstick_host.domain.parsers.common import ParseError, shorten, single_line, split_lines

_BOOT_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_RELEASE = re.compile(r"[0-9][0-9A-Za-z._+~-]{0,127}")
_ARCH = re.compile(r"[a-z0-9_]{1,32}")
# the NVIDIA ones as text, compiled (by re's cache) when an NVIDIA host is read: inspect on
# any other host does not spend the compile on them
_NVIDIA_VERSION = r"[0-9]+\.[0-9]+(?:\.[0-9]+)?"
_NVRM_VERSION = r"(?<![0-9A-Za-z_.])([0-9]+\.[0-9]+(?:\.[0-9]+)?)(?![0-9A-Za-z_.])"
_MODEL_NAME = re.compile(r"model name\s*:\s*(.*)")


def _matching(text: str, pattern: re.Pattern[str] | str, what: str) -> str:
    body = single_line(text, what)
    if not re.fullmatch(pattern, body):
        raise ParseError(f"{what}: unexpected value {shorten(body)!r}")
    return body


def parse_boot_id(text: str) -> str:
    """A lowercase UUID, as /proc/sys/kernel/random/boot_id and the Node's bootID show it."""
    return _matching(text, _BOOT_ID, "boot_id")


def parse_kernel_release(text: str) -> str:
    """`uname -r`, e.g. 7.0.0-31-generic."""
    return _matching(text, _RELEASE, "osrelease")


def parse_arch(text: str) -> str:
    return _matching(text, _ARCH, "arch")


def parse_nvidia_module_version(text: str) -> str:
    """/sys/module/nvidia/version: bare, e.g. 580.95.05."""
    return _matching(text, _NVIDIA_VERSION, "nvidia version")


def parse_nvrm_version(text: str) -> str:
    """/proc/driver/nvidia/version: the version on the `NVRM version:` line."""
    for line in split_lines(text):
        if line.startswith("NVRM version:"):
            match = re.search(_NVRM_VERSION, line)
            if match is None:
                raise ParseError("NVRM version: no version number")
            return match.group(1)
    raise ParseError("no 'NVRM version:' line")


def parse_cpu_model(text: str) -> str:
    """The first `model name` of /proc/cpuinfo."""
    for line in split_lines(text):
        match = _MODEL_NAME.fullmatch(line)
        if match is not None:
            model = match.group(1).strip()
            if not model or not model.isprintable():
                raise ParseError("model name: empty or unprintable")
            return model
    raise ParseError("no 'model name' line")


def parse_dmi_line(text: str, what: str) -> str:
    """A DMI string (sys_vendor, product_name): trimmed, non-empty, printable."""
    value = single_line(text, what).strip()
    if not value or not value.isprintable() or len(value) > 256:
        raise ParseError(f"{what}: empty, unprintable or too long")
    return value
