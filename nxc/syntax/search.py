"""Where `import "x.nx"` leads: the search path, the names refused, the file found.

Lookup order (docs/language.md): the importing file's folder, each -I folder,
each NXPATH folder, then the bundled nx_src/. Kept apart from the loader,
which parses: the module index resolves a whole tree's imports on every
`nxc test` run, and a run that finds nothing changed would otherwise import
the parser only to resolve names (the no-change path, docs/runner.md).
"""
from __future__ import annotations

import os
import stat

from nxc.paths import bundled_dir


def search_path(include: list[str] | None = None) -> list[str]:
    dirs = [os.path.abspath(d) for d in (include or [])]
    env = os.environ.get("NXPATH", "")
    dirs += [os.path.abspath(d) for d in env.split(os.pathsep) if d]
    dirs.append(bundled_dir())
    return dirs


def import_refusal(name: str) -> str | None:
    """Why `import "name"` is refused (None: it is not).

    An import names a .nx module inside a search folder: an absolute path,
    a path that climbs out with `..`, or another kind of file would let a
    module read (and an error message quote) any file on the machine.
    """
    if "\0" in name:       # no file name holds one; os.stat would raise ValueError
        return f"import {name!r}: an import name may not hold a NUL byte"
    if os.path.isabs(name):
        return f"import \"{name}\": an import is a path relative to the search folders, not an absolute path"
    if os.path.normpath(name).split(os.sep)[0] == os.pardir:
        return f"import \"{name}\": an import may not climb out of the search folders with '..'"
    if not name.endswith(".nx"):
        return f"import \"{name}\": an import names a .nx module"
    return None


def resolve_import(name: str, importer_dir: str, include: list[str] | None,
                   real_dirs: dict[str, str] | None = None) -> tuple[str | None, list[str]]:
    """(real path or None, folders tried in order).

    `real_dirs` ({folder: its real path}, kept by the caller for one load of a
    graph, e.g. the importer folders it already knows to be real): a plain
    file name found in a folder as a regular file, not a link, is then that
    folder's real path joined with it, one lstat instead of realpath's walk
    over every folder of the path (a gate of a large tree resolves some
    hundreds of imports)."""
    if "\0" in name:       # import_refusal's message; callers that skip it find nothing
        return None, []
    plain = real_dirs is not None and os.sep not in name and (os.altsep is None or os.altsep not in name)
    tried = []
    for d in [importer_dir, *search_path(include)] if not plain else _folders(importer_dir, include):
        if d in tried:
            continue
        tried.append(d)
        candidate = os.path.join(d, name)
        if plain:
            try:
                mode = os.lstat(candidate).st_mode
            except OSError:
                continue
            if stat.S_ISREG(mode):
                real = real_dirs.get(d)
                if real is None:
                    real = real_dirs[d] = os.path.realpath(d)
                return os.path.join(real, name), tried
            if not stat.S_ISLNK(mode):
                continue                    # a folder or a device: not a module
        if os.path.isfile(candidate):
            return os.path.realpath(candidate), tried
    return None, tried


def _folders(importer_dir: str, include: list[str] | None):
    """The importer's folder, then the search path (computed only if needed)."""
    yield importer_dir
    yield from search_path(include)
