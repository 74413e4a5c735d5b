"""The kernel command line (/proc/cmdline) and the module parameters set on it."""

from __future__ import annotations

from magicstick_host.domain.parsers.common import ParseError
from magicstick_host.domain.parsers.ttm_params import is_memory_param

MAX_CMDLINE_CHARS = 65536


def split_cmdline(text: str) -> tuple[str, ...]:
    """Arguments as the kernel's next_arg() splits them: on blanks, except inside double
    quotes, which are removed (`"a=b c"` and `a="b c"` are both the argument `a=b c`)."""
    if len(text) > MAX_CMDLINE_CHARS:
        raise ParseError("command line too long")
    args: list[str] = []
    current: list[str] = []
    started = quoted = False
    for char in text:
        if char == '"':
            quoted = not quoted
            started = True
            continue
        if char.isspace() and char.isascii() and not quoted:
            if started:
                args.append("".join(current))
                current, started = [], False
            continue
        current.append(char)
        started = True
    if quoted:
        raise ParseError("unterminated quote")
    if started:
        args.append("".join(current))
    return tuple(args)


def module_param(arg: str) -> tuple[str, str] | None:
    """(module, parameter) of a `module.param[=value]` argument, else None."""
    key = arg.split("=", 1)[0]
    module, dot, param = key.partition(".")
    if not dot or not module or not param:
        return None
    return module, param


def memory_overrides(args: tuple[str, ...]) -> tuple[str, ...]:
    """The arguments that size TTM/GTT, e.g. `ttm.pages_limit=...`, `amdgpu.gttsize=...`."""
    found = []
    for arg in args:
        pair = module_param(arg)
        if pair is not None and is_memory_param(*pair):
            found.append(arg)
    return tuple(found)
