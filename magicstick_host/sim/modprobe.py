"""Module options as a boot applies them: modprobe.d files plus `module.param=` on the cmdline.

Like kmod: the `*.conf` files of /etc/modprobe.d, /run/modprobe.d, /usr/lib/modprobe.d and
/lib/modprobe.d are read in the order of their file names; a file in an earlier directory hides
a same-named one in a later directory. Options of one module accumulate, so the last value of a
parameter wins, and `module.param=value` on the kernel command line comes after all files.
Module names compare with `-` and `_` as the same character. Backslash-newline continues a line.
"""

from __future__ import annotations

CONFIG_DIRS = ("etc/modprobe.d", "run/modprobe.d", "usr/lib/modprobe.d", "lib/modprobe.d")


def _norm(module: str) -> str:
    return module.replace("-", "_")


def effective_files(files: dict[str, str]) -> list[tuple[str, str]]:
    """(path, text) of the files modprobe reads, in the order it reads them."""
    chosen: dict[str, tuple[int, str, str]] = {}
    for path, text in files.items():
        directory, _, name = path.rpartition("/")
        if directory not in CONFIG_DIRS or not name.endswith(".conf"):
            continue
        rank = CONFIG_DIRS.index(directory)
        if name not in chosen or rank < chosen[name][0]:
            chosen[name] = (rank, path, text)
    return [(path, text) for _, (_, path, text) in sorted(chosen.items())]


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        if raw.endswith("\\"):
            pending += raw[:-1] + " "
            continue
        lines.append(pending + raw)
        pending = ""
    if pending:
        lines.append(pending)
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def module_options(files: dict[str, str], cmdline: str, module: str) -> dict[str, str]:
    """The parameters `module` gets when it loads: {name: value}, the last one winning."""
    options: dict[str, str] = {}
    for _, text in effective_files(files):
        for line in _logical_lines(text):
            words = line.split()
            if len(words) >= 2 and words[0] == "options" and _norm(words[1]) == _norm(module):
                for word in words[2:]:
                    key, _, value = word.partition("=")
                    options[key] = value
    for word in cmdline.split():
        name, dot, rest = word.partition(".")
        if dot and "=" in rest and _norm(name) == _norm(module):
            key, _, value = rest.partition("=")
            options[key] = value
    return options
