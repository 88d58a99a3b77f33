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


# The cache folder lives in nxc/cache.py (with what makes its entries
# trustworthy); these names stay importable from here.
from nxc.cache import (CACHE_PARTS, cache_clear, cache_dir, cache_info, prune_due,  # noqa: E402,F401
                       prune_least_recent, write_atomically, expect_entries, scaled_bound)


def digest_of_files(*paths: str) -> str:
    """A content hash of files, for cache keys that must change with them."""
    h = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            h.update(f.read())
        h.update(b"\0")
    return h.hexdigest()


# --soft-f32: the bundled module that holds the float32 primitives written in
# .nx (the checker redirects them there; the planner adds it to a closure).
SOFT_F32_MODULE = "nx_f32_soft.nx"
