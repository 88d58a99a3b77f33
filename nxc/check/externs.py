"""The runtime's extern table (runtime/nx_externs.py), loaded from wherever
the runtime folder is: the checker validates `extern func` against it."""
from __future__ import annotations

import importlib.util
import os
from functools import lru_cache

from nxc.paths import runtime_dir


@lru_cache(maxsize=1)
def _table():
    path = os.path.join(runtime_dir(), "nx_externs.py")
    spec = importlib.util.spec_from_file_location("nxc_runtime_externs", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def externs() -> dict:
    """name -> ((param type names...), result type name)."""
    return _table().EXTERNS


def f32_primitives() -> frozenset:
    return frozenset(_table().F32_PRIMITIVES)


def sited_externs() -> frozenset:
    """Externs whose call can fault at its site: checked C's nxrt_chk_ twins, the Python
    backend's site= (runtime/nx_externs.py)."""
    return frozenset(_table().SITED_EXTERNS)


def memory_externs() -> frozenset:
    """Externs with effects beyond their result (runtime/nx_externs.py); the rest are pure."""
    return frozenset(_table().MEMORY_EXTERNS)


def task_externs() -> frozenset:
    """Externs whose first argument names a task function (runtime/nx_externs.py)."""
    return frozenset(getattr(_table(), "TASK_EXTERNS", ()))
