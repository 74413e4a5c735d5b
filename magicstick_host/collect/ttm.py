"""TTM (the GPU's dynamic share of RAM): the active limit, the managed modprobe file, and
every setting that competes with it."""

from __future__ import annotations

from magicstick_host.collect.reader import Reader
from magicstick_host.domain.evidence import MANAGED_TTM_FILE, TTM_MODULE_NAMES, TtmInfo, TtmOverride
from magicstick_host.domain.parsers.cmdline import memory_overrides, split_cmdline
from magicstick_host.domain.parsers.common import parse_int, parse_uint
from magicstick_host.domain.parsers.grub import grub_cmdlines
from magicstick_host.domain.parsers.modprobe import is_memory_override, parse_modprobe, ttm_settings

# kmod's search order: for files of the same name, the first directory wins
MODPROBE_DIRS = (
    "/etc/modprobe.d",
    "/run/modprobe.d",
    "/usr/local/lib/modprobe.d",
    "/usr/lib/modprobe.d",
    "/lib/modprobe.d",
)
GRUB_DEFAULT = "/etc/default/grub"
GRUB_DEFAULT_D = "/etc/default/grub.d"
MAX_OVERRIDE_TEXT = 200


def collect_ttm(r: Reader, cmdline: tuple[str, ...] | None) -> TtmInfo:
    module, pages_limit, pool, gttsize = _active(r)
    present, managed_limit = _managed(r)
    overrides = _modprobe_overrides(r) + _cmdline_overrides(cmdline) + _grub_overrides(r)
    return TtmInfo(
        module=module,
        pages_limit=pages_limit,
        page_pool_size=pool,
        amdgpu_gttsize=gttsize,
        managed_pages_limit=managed_limit,
        managed_file_present=present,
        overrides=overrides,
    )


def _active(r: Reader) -> tuple[str | None, int | None, int | None, int | None]:
    """(module, pages_limit, page_pool_size, amdgpu gttsize) as the running kernel has them."""
    if not r.exists("/sys/module/amdgpu", "ttm.module", otherwise=False):
        return None, None, None, None
    gttsize = r.parsed("/sys/module/amdgpu/parameters/gttsize", "ttm.amdgpu_gttsize",
                       lambda t: parse_int(t, "gttsize"))
    holders = [
        name for name in TTM_MODULE_NAMES
        if r.exists(f"/sys/module/{name}/holders/amdgpu", "ttm.module", otherwise=False)
    ]
    if len(holders) != 1:
        found = ", ".join(holders) or "none"
        r.unknown("ttm.module", "/sys/module/*/holders/amdgpu", f"ttm modules holding amdgpu: "
                  f"{found}")
        return None, None, None, gttsize
    module = holders[0]
    params = f"/sys/module/{module}/parameters"
    pages_limit = r.parsed(f"{params}/pages_limit", "ttm.pages_limit",
                           lambda t: parse_uint(t, "pages_limit"))
    pool = r.parsed(f"{params}/page_pool_size", "ttm.page_pool_size",
                    lambda t: parse_uint(t, "page_pool_size"))
    return module, pages_limit, pool, gttsize


def _managed(r: Reader) -> tuple[bool, int | None]:
    if not r.exists(MANAGED_TTM_FILE, "ttm.managed_file_present", otherwise=False):
        return False, None
    commands = r.parsed(MANAGED_TTM_FILE, "ttm.managed_pages_limit", parse_modprobe)
    if commands is None:
        return True, None
    limit = ttm_settings(commands).get("pages_limit")
    if limit is None:
        r.unknown("ttm.managed_pages_limit", MANAGED_TTM_FILE, "no valid pages_limit")
    return True, limit


def _modprobe_overrides(r: Reader) -> tuple[TtmOverride, ...]:
    effective: dict[str, str] = {}
    for directory in MODPROBE_DIRS:
        for name in r.list_dir(directory, "ttm.overrides", optional=True) or []:
            if name.endswith(".conf"):
                effective.setdefault(name, f"{directory}/{name}")
    found: list[TtmOverride] = []
    for name in sorted(effective):
        path = effective[name]
        if path == MANAGED_TTM_FILE:
            continue
        commands = r.parsed(path, "ttm.overrides", parse_modprobe)
        for command in commands or ():
            if is_memory_override(command):
                found.append(TtmOverride(source=path, text=command.text[:MAX_OVERRIDE_TEXT]))
    return tuple(found)


def _cmdline_overrides(cmdline: tuple[str, ...] | None) -> tuple[TtmOverride, ...]:
    return tuple(
        TtmOverride(source="/proc/cmdline", text=arg[:MAX_OVERRIDE_TEXT])
        for arg in memory_overrides(cmdline or ())
    )


def _grub_overrides(r: Reader) -> tuple[TtmOverride, ...]:
    paths = [GRUB_DEFAULT]
    # Ubuntu cloud images append to the command line from grub.d snippets
    names = r.list_dir(GRUB_DEFAULT_D, "ttm.overrides", optional=True) or []
    paths += [f"{GRUB_DEFAULT_D}/{name}" for name in names if name.endswith(".cfg")]
    found: list[TtmOverride] = []
    for path in paths:
        assignments = r.parsed(path, "ttm.overrides", grub_cmdlines, optional=True) or ()
        for _variable, value in assignments:
            args = r.parse(value, path, "ttm.overrides", split_cmdline) or ()
            found += [TtmOverride(source=path, text=arg[:MAX_OVERRIDE_TEXT])
                      for arg in memory_overrides(args)]
    return tuple(found)
