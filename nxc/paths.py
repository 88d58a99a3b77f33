"""Where nxc finds its own files, in a source checkout and when installed.

In the repository the design keeps grammar/, runtime/ and nx_src/ at the top
level; an installed nxc carries them as the data packages nxc.grammar,
nxc.runtime and nxc.nx_src (see pyproject.toml). Ask the import system, so
both layouts (and editable installs) resolve the same way.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from functools import lru_cache

_HERE = os.path.dirname(os.path.abspath(__file__))


@lru_cache(maxsize=None)
def _data_dir(package: str, top_level: str) -> str:
    root = os.path.dirname(_HERE)
    checkout = os.path.join(root, top_level)
    if os.path.isdir(checkout) and os.path.isfile(os.path.join(root, "pyproject.toml")):
        return checkout
    spec = importlib.util.find_spec(package)
    if spec is not None and spec.submodule_search_locations:
        return list(spec.submodule_search_locations)[0]
    raise RuntimeError(f"nxc installation is incomplete: cannot find {top_level}/")


def grammar_file() -> str:
    return os.path.join(_data_dir("nxc.grammar", "grammar"), "nx.lark")


def runtime_dir() -> str:
    return _data_dir("nxc.runtime", "runtime")


def bundled_dir() -> str:
    """The bundled modules (nx_src/): the last place imports are looked up."""
    return _data_dir("nxc.nx_src", "nx_src")


def templates_dir() -> str:
    return os.path.join(_HERE, "backend", "templates")


def cache_dir() -> str:
    """NXC_CACHE_DIR, else the user's cache folder (XDG_CACHE_HOME)."""
    env = os.environ.get("NXC_CACHE_DIR")
    if env:
        return os.path.abspath(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "nxc")


# The cache folder's parts: what each holds (see docs/build.md).
CACHE_PARTS = {
    "c": "built modules",
    "parse": "parsed modules and the grammar's parse table",
}


def cache_info() -> dict:
    """{"path": folder, "parts": {name: (files, bytes)}} of the cache folder."""
    parts = {}
    for name in CACHE_PARTS:
        folder = os.path.join(cache_dir(), name)
        files = [os.path.join(folder, f) for f in os.listdir(folder)] if os.path.isdir(folder) else []
        files = [f for f in files if os.path.isfile(f)]
        parts[name] = (len(files), sum(os.path.getsize(f) for f in files))
    return {"path": cache_dir(), "parts": parts}


def cache_clear() -> dict:
    """Empty every part of the cache folder; returns what was there."""
    info = cache_info()
    for name in CACHE_PARTS:
        shutil.rmtree(os.path.join(cache_dir(), name), ignore_errors=True)
    return info


PRUNE_EVERY = 256      # writes between two looks at a cache part's size

# The number of modules the current run works on (nxc test over a tree sets
# it before forking its workers). Every cache part's bound is at least twice
# that, so one full run of a tree never evicts what the next run needs: a
# fixed bound made any tree of more than ~1,000 modules never fully warm.
_working_set = 0


def expect_entries(modules: int) -> None:
    """This run touches `modules` modules: raise every cache bound to fit them."""
    global _working_set
    _working_set = max(_working_set, modules)


def scaled_bound(default: int) -> int:
    """A cache part's bound: its default, or twice the run's modules if larger."""
    return max(default, 2 * _working_set)


def prune_due(writes: int) -> bool:
    """Whether a cache part should be checked after its `writes`-th write in
    this process: the first, then every PRUNE_EVERY (a look is one directory
    scan, a few milliseconds)."""
    return (writes - 1) % PRUNE_EVERY == 0


def prune_least_recent(folder: str, keep: int, is_entry) -> int:
    """Past `keep` entries (files whose name passes `is_entry`), remove the
    least recently used, down to three quarters of `keep`; returns how many.

    "Used" is the modification time: readers touch an entry on a hit.
    Removing a file another process has open or mapped is harmless on POSIX.
    """
    try:
        entries = [(e.stat().st_mtime, e.path) for e in os.scandir(folder) if is_entry(e.name)]
    except OSError:
        return 0
    if len(entries) <= keep:
        return 0
    entries.sort()
    removed = 0
    for _, path in entries[:len(entries) - keep * 3 // 4]:
        try:
            os.remove(path)
            removed += 1
        except OSError:
            pass
    return removed


def write_atomically(path: str, data: bytes) -> None:
    """Write a cache file so that readers see all of it or none of it.

    Several processes share the cache (pytest-xdist, `nxc test -j`); a
    failure to write (read-only cache) only costs speed, so it is ignored.
    """
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        pass


def digest_of_files(*paths: str) -> str:
    """A content hash of files, for cache keys that must change with them."""
    h = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            h.update(f.read())
        h.update(b"\0")
    return h.hexdigest()
