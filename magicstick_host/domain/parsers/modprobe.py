"""modprobe.d(5) files: comments, backslash continuations and `options <module> k=v ...`."""

from __future__ import annotations

from magicstick_host.domain.parsers.common import MAX_DIGITS, ParseError, split_lines
from magicstick_host.domain.parsers.ttm_params import (
    is_memory_param,
    is_ttm_module,
    normalize_name,
)
from magicstick_host.lite_dataclasses import dataclass


@dataclass(frozen=True)
class ModprobeCommand:
    command: str  # options, install, blacklist, ...
    module: str  # normalized (`-` -> `_`)
    params: tuple[tuple[str, str | None], ...]  # options only; value None for a bare flag
    text: str  # the logical line, whitespace-collapsed


def logical_lines(text: str) -> list[str]:
    """Lines with continuations joined, comments and blank lines dropped (as kmod does:
    a `#` starts a comment only as the first non-blank character)."""
    out: list[str] = []
    pending = ""
    for line in split_lines(text):
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        out.append(pending + line)
        pending = ""
    if pending:
        out.append(pending)
    return [line for line in out if line.strip() and not line.lstrip().startswith("#")]


def _split_params(rest: str) -> list[str]:
    """kmod splits options on blanks, except inside double quotes."""
    words: list[str] = []
    current: list[str] = []
    quoted = False
    for char in rest:
        if char == '"':
            quoted = not quoted
        elif char in " \t" and not quoted:
            if current:
                words.append("".join(current))
                current = []
            continue
        current.append(char)
    if quoted:
        raise ParseError(f"unterminated quote in {rest!r}")
    if current:
        words.append("".join(current))
    return words


def parse_modprobe(text: str) -> tuple[ModprobeCommand, ...]:
    commands: list[ModprobeCommand] = []
    for line in logical_lines(text):
        words = line.split()
        if len(words) < 2:
            # kmod ignores these lines too, but they make a file we cannot vouch for
            raise ParseError(f"command without a module: {' '.join(words)!r}")
        command, module = words[0], normalize_name(words[1])
        params: list[tuple[str, str | None]] = []
        if command == "options":
            # kmod passes the options with every tab a blank (modprobe --showconfig shows it)
            rest = line.split(None, 2)[2].replace("\t", " ") if len(words) > 2 else ""
            for word in _split_params(rest):
                key, sep, value = word.partition("=")
                params.append((normalize_name(key), value.strip('"') if sep else None))
        commands.append(ModprobeCommand(command, module, tuple(params), " ".join(words)))
    return tuple(commands)


def is_memory_override(command: ModprobeCommand) -> bool:
    """An `options` line that sizes TTM/GTT, or an `install` hook that smuggles one in."""
    if command.command == "options":
        return any(is_memory_param(command.module, key) for key, _ in command.params)
    if command.command == "install" and (is_ttm_module(command.module)
                                         or command.module == "amdgpu"):
        return any(k in command.text for k in ("pages_limit", "gttsize", "gartsize", "vramlimit",
                                               "page_pool_size"))
    return False


def ttm_settings(commands: tuple[ModprobeCommand, ...]) -> dict[str, int | None]:
    """pages_limit and page_pool_size set for any ttm module name; a later setting wins, as
    the kernel applies parameters in order. A non-integer value reads as None."""
    found: dict[str, int | None] = {}
    for command in commands:
        if command.command != "options" or not is_ttm_module(command.module):
            continue
        for key, value in command.params:
            if key in ("pages_limit", "page_pool_size"):
                if value and len(value) <= MAX_DIGITS and value.isascii() and value.isdigit():
                    found[key] = int(value)
                else:
                    found[key] = None
    return found
