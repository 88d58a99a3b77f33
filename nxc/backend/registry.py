"""Backends by name: "c" and "py".

Imported lazily, so a command that uses one backend never pays for the
other's import (and a missing backend is an ImportError at the point of use).
"""
from __future__ import annotations

from nxc.backend.base import Backend

NAMES = ("c", "py")


def backend_for(name: str, checked: bool = True) -> Backend:
    """checked: the C backend's memory checks and .nx stack (the Python backend is always checked)."""
    if name == "c":
        from nxc.backend.c.backend import CBackend
        return CBackend(checked=checked)
    if name == "py":
        from nxc.backend.py.backend import PyBackend
        return PyBackend()
    raise ValueError(f"backend must be one of {', '.join(NAMES)}, not {name!r}")
