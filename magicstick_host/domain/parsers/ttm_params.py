"""Which module parameters compete with the managed TTM limit (host-facts.md, TTM / GTT)."""

from __future__ import annotations

from magicstick_host.domain.evidence import TTM_MODULE_NAMES

# every ttm parameter sizes its page pools, so any `options ttm ...` competes
_TTM_MODULES = frozenset(TTM_MODULE_NAMES)
# amdgpu's own GTT/VRAM sizing knobs (gttsize is deprecated, but still honoured)
_AMDGPU_MEMORY_PARAMS = frozenset({"pages_limit", "gttsize", "gartsize", "vramlimit"})


def normalize_name(name: str) -> str:
    """The kernel and kmod treat `-` and `_` in module and parameter names as the same."""
    return name.replace("-", "_")


def is_memory_param(module: str, param: str) -> bool:
    module, param = normalize_name(module), normalize_name(param)
    if module in _TTM_MODULES:
        return True
    return module == "amdgpu" and param in _AMDGPU_MEMORY_PARAMS


def is_ttm_module(module: str) -> bool:
    return normalize_name(module) in _TTM_MODULES
