# Byte-compile the installed worker for the host's python3; remove byte-code that matches no
# installed module (or another interpreter). Prints each path it wrote or removed, so the
# playbook reports a change exactly when there was one. Run as:
#   python3 -I -c "<this file>" INSTALLED_PACKAGE_DIR HOST_PACKAGE_DIR [--check]
# HOST_PACKAGE_DIR is where the package lives on the host (it differs under a test root): it is
# the path tracebacks show.
#
# Why: the worker's command keeps the installed tree read-only at run time
# (sys.dont_write_bytecode), so without byte-code every tick, 5,760 a day, compiled every module
# from source: about half of an idle tick's CPU. The byte-code is checked against the source's
# mtime and size on import (the default "timestamp" mode), so a file edited by hand afterwards is
# compiled in memory, never run from stale byte-code.
import importlib.util
import os
import py_compile
import sys


def fresh(source, cached):
    try:
        with open(cached, "rb") as handle:
            header = handle.read(16)
        st = os.stat(source)
    except OSError:
        return False
    return (
        len(header) == 16
        and header[:4] == importlib.util.MAGIC_NUMBER
        and int.from_bytes(header[4:8], "little") == 0  # timestamp-based
        and int.from_bytes(header[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
        and int.from_bytes(header[12:16], "little") == st.st_size & 0xFFFFFFFF
    )


def main(package, host_package, check):
    tag = sys.implementation.cache_tag
    changed = []
    for directory, dirs, files in os.walk(package):
        dirs.sort()
        if os.path.basename(directory) == "__pycache__":
            parent = os.path.dirname(directory)
            for name in sorted(files):
                stem, _, rest = name.partition(".")
                if rest != f"{tag}.pyc" or not os.path.isfile(os.path.join(parent, stem + ".py")):
                    changed.append(os.path.join(directory, name))
                    if not check:
                        os.unlink(os.path.join(directory, name))
            continue
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            source = os.path.join(directory, name)
            cached = importlib.util.cache_from_source(source)
            if fresh(source, cached):
                continue
            changed.append(cached)
            if check:
                continue
            os.makedirs(os.path.dirname(cached), mode=0o755, exist_ok=True)
            os.chmod(os.path.dirname(cached), 0o755)
            shown = os.path.join(host_package, os.path.relpath(source, package))
            py_compile.compile(source, cfile=cached, dfile=shown, doraise=True,
                               invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
            os.chmod(cached, 0o644)
    for path in changed:
        print(path)


main(sys.argv[1], sys.argv[2], "--check" in sys.argv[3:])
